;;; elelem-suggest.el --- ghost text and next edits from elelem-lsp  -*- lexical-binding: t; -*-

;; Package-Requires: ((emacs "28.1") (eglot "1.9"))

;;; Commentary:

;; Bridges elelem-lsp's suggestions to the buffers eglot manages for it: ghost text (LSP 3.18's
;; `textDocument/inlineCompletion', which eglot does not send: sent here through its jsonrpc
;; connection) as an overlay at point, and next edits (`elelem/nextEdit', announced in the client
;; capabilities) as overlays where they apply.  Both are asked for a moment after a change; a
;; newer request supersedes the older.  Keys accept or dismiss them, and each acceptance is
;; recorded with the server's `elelem.completionAccepted'.
;;
;;   (require 'elelem-suggest)
;;   (elelem-suggest-setup)   ; `elelem-suggest-mode' in every buffer eglot manages for elelem
;;
;; While ghost text shows: TAB accepts it, M-f a word of it, C-e its line, M-] asks again, C-g
;; dismisses it.  While a next edit waits: M-n jumps to it, M-RET accepts every edit as one
;; undoable change, C-g dismisses it.

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'elelem)

(defgroup elelem-suggest nil "Ghost text and next edits from elelem-lsp." :group 'elelem)

(defcustom elelem-ghost-delay 0.1
  "Seconds typing pauses before ghost text is asked for."
  :type 'number)

(defcustom elelem-next-edit-delay 0.3
  "Seconds typing pauses before the next edit is asked for."
  :type 'number)

(defcustom elelem-suggest-next-edit t
  "Whether next edits are announced to the server and asked for."
  :type 'boolean)

(defface elelem-ghost-face '((t :inherit shadow)) "Ghost text.")
(defface elelem-next-edit-old-face '((t :inherit shadow :strike-through t)) "Text a next edit replaces.")
(defface elelem-next-edit-new-face '((t :inherit success)) "Text a next edit puts in.")

(defvar elelem-ghost-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "TAB") #'elelem-ghost-accept)
    (define-key map (kbd "<tab>") #'elelem-ghost-accept)
    (define-key map (kbd "M-f") #'elelem-ghost-accept-word)
    (define-key map (kbd "C-e") #'elelem-ghost-accept-line)
    (define-key map (kbd "M-]") #'elelem-ghost-next)
    (define-key map (kbd "C-g") #'elelem-ghost-dismiss)
    map)
  "Keys while ghost text shows.")

(defvar elelem-next-edit-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "M-n") #'elelem-next-edit-jump)
    (define-key map (kbd "M-RET") #'elelem-next-edit-accept)
    (define-key map (kbd "C-g") #'elelem-next-edit-dismiss)
    map)
  "Keys while a next edit waits.")

(defvar-local elelem--ghost nil
  "The ghost text shown, a plist.
:overlay OV, :start MARKER (where the text goes; it stays before what
is typed there), :text STRING, :command CMD, :accepted CHARS.")
(defvar-local elelem--ghost-items nil "The items of the last answer, and the shown one's index.")
(defvar-local elelem--next-edit nil "The waiting next edit: (:id ID :edits EDITS :tick TICK :overlays OVS).")
(defvar-local elelem--suggest-tick 0 "The buffer's modification tick after the last command.")
(defvar-local elelem--timers nil "Pending requests by kind (`ghost', `next-edit'), as timers.")
(defvar-local elelem--generations nil "Requests made by kind: an older answer is known as such.")

(add-to-list 'minor-mode-map-alist (cons 'elelem--ghost elelem-ghost-map))
(add-to-list 'minor-mode-map-alist (cons 'elelem--next-edit elelem-next-edit-map))

(defconst elelem--suggest-commands
  '(elelem-ghost-accept elelem-ghost-accept-word elelem-ghost-accept-line elelem-ghost-next elelem-ghost-dismiss
    elelem-next-edit-jump elelem-next-edit-accept elelem-next-edit-dismiss)
  "Commands whose own changes start no request.
They ask themselves when they should.")

(cl-defmethod eglot-client-capabilities :around ((_server elelem-server))
  "What elelem.el announces, and `experimental.elelem.nextEdit'."
  (let* ((capabilities (cl-call-next-method))
         (experimental (plist-get capabilities :experimental)))
    (if elelem-suggest-next-edit
        (plist-put capabilities :experimental
                   (plist-put experimental :elelem (plist-put (plist-get experimental :elelem) :nextEdit t)))
      capabilities)))

(defun elelem--suggest-server ()
  "This buffer's elelem server, if eglot manages the buffer for one."
  (let ((server (and (eglot-managed-p) (eglot-current-server))))
    (and (cl-typep server 'elelem-server) server)))

(defun elelem--ask (kind method params on-result)
  "Send METHOD with PARAMS; ON-RESULT gets a non-null answer.
Only if no newer KIND request, no change and no move came since."
  (let ((server (elelem--suggest-server)))
    (when server
      (eglot--signal-textDocument/didChange)  ; eglot sends changes when idle: this request reads them now
      (let ((generation (1+ (alist-get kind elelem--generations 0)))
            (buffer (current-buffer))
            (tick (buffer-chars-modified-tick))
            (point (point)))
        (setf (alist-get kind elelem--generations) generation)
        (jsonrpc-async-request
         server method params
         :success-fn (lambda (result)
                       (when (buffer-live-p buffer)
                         (with-current-buffer buffer
                           (when (and result (= generation (alist-get kind elelem--generations 0))
                                      (= tick (buffer-chars-modified-tick)) (= point (point)))
                             (funcall on-result result)))))
         :error-fn #'ignore
         :timeout-fn #'ignore)))))

(defun elelem--schedule (kind delay function)
  "Run FUNCTION in this buffer after DELAY seconds.
Unless KIND is scheduled again first."
  (let ((buffer (current-buffer)))
    (when-let ((timer (alist-get kind elelem--timers)))
      (cancel-timer timer))
    (setf (alist-get kind elelem--timers)
          (run-with-timer delay nil (lambda ()
                                      (when (buffer-live-p buffer)
                                        (with-current-buffer buffer
                                          (setf (alist-get kind elelem--timers) nil)
                                          (funcall function))))))))

(defun elelem--accepted (command &optional chars)
  "Run the acceptance COMMAND (an LSP Command) of a suggestion.
CHARS says how many characters were kept, when not all of it."
  (let ((server (elelem--suggest-server))
        (argument (and (listp command) (copy-sequence (elt (plist-get command :arguments) 0)))))
    (when (and server argument)
      (when chars (setq argument (plist-put argument :chars chars)))
      (jsonrpc-async-request server :workspace/executeCommand
                             (list :command (plist-get command :command) :arguments (vector argument))
                             :success-fn #'ignore :error-fn #'ignore :timeout-fn #'ignore))))

;;;; Ghost text

(defun elelem--ghost-request (kind)
  "Ask for ghost text at point (KIND: 1 invoked, 2 automatic)."
  (when (eglot--server-capable :inlineCompletionProvider)
    (elelem--ask 'ghost :textDocument/inlineCompletion
                 (append (eglot--TextDocumentPositionParams) (list :context (list :triggerKind kind)))
                 (lambda (result)
                   (let ((items (append (if (vectorp result) result (plist-get result :items)) nil)))
                     (setq elelem--ghost-items (cons 0 items))
                     (elelem--ghost-show (car items)))))))

(defun elelem--ghost-draw (text)
  "Show TEXT as ghost text at point, the cursor before it."
  (when-let ((old (plist-get elelem--ghost :overlay)))
    (delete-overlay old))
  (let ((shown (propertize text 'face 'elelem-ghost-face))
        (overlay (make-overlay (point) (point) nil t nil)))
    (put-text-property 0 1 'cursor t shown)
    (overlay-put overlay 'after-string shown)
    (overlay-put overlay 'elelem-ghost t)
    (setq elelem--ghost (plist-put (plist-put (plist-put elelem--ghost :overlay overlay) :text text)
                                   :start (copy-marker (point))))))

(defun elelem--ghost-show (item)
  (elelem--ghost-clear)
  (let ((text (plist-get item :insertText)))
    (when (and (stringp text) (not (string-empty-p text)))
      (setq elelem--ghost (list :command (plist-get item :command) :accepted 0))
      (elelem--ghost-draw text))))

(defun elelem--ghost-clear ()
  "Hide the ghost text, recording the part of it the keys accepted."
  (when elelem--ghost
    (let ((ghost elelem--ghost))
      (delete-overlay (plist-get ghost :overlay))
      (setq elelem--ghost nil)
      (when (> (plist-get ghost :accepted) 0)
        (elelem--accepted (plist-get ghost :command) (plist-get ghost :accepted))))))

(defun elelem--ghost-typed-along ()
  "Keep what is left of the ghost text after typing along it.
t when the last command typed the start of it."
  (let* ((start (marker-position (plist-get elelem--ghost :start)))
         (text (plist-get elelem--ghost :text)))
    (when (and (>= (point) start) (<= (point) (line-end-position)) (= (line-number-at-pos start) (line-number-at-pos)))
      (let ((typed (buffer-substring-no-properties start (point))))
        (when (and (string-prefix-p typed text) (< (length typed) (length text)))
          (elelem--ghost-draw (substring text (length typed)))
          t)))))

(defun elelem--ghost-piece (text unit)
  "The part of TEXT that accepting a UNIT (`word', `line' or `all') takes."
  (pcase unit
    ('word (and (string-match "\\`\n?[ \t]*\\(?:\\(?:\\sw\\|\\s_\\)+\\|[^[:space:]]\\)" text) (match-string 0 text)))
    ('line (and (string-match "\\`\n?[^\n]*" text) (match-string 0 text)))
    (_ text)))

(defun elelem--ghost-take (unit)
  (when elelem--ghost
    (let* ((text (plist-get elelem--ghost :text))
           (part (or (elelem--ghost-piece text unit) text))
           (rest (substring text (length part)))
           (accepted (+ (plist-get elelem--ghost :accepted) (length part))))
      (goto-char (plist-get elelem--ghost :start))
      (insert part)
      (setq elelem--ghost (plist-put elelem--ghost :accepted accepted))
      (if (not (string-empty-p rest))
          (elelem--ghost-draw rest)
        (let ((command (plist-get elelem--ghost :command))
              (whole (= accepted (length part))))
          (delete-overlay (plist-get elelem--ghost :overlay))
          (setq elelem--ghost nil)
          (elelem--accepted command (unless whole accepted)))))))

(defun elelem-ghost-accept ()
  "Insert the ghost text."
  (interactive)
  (elelem--ghost-take 'all))

(defun elelem-ghost-accept-word ()
  "Insert the ghost text's next word; the rest stays shown."
  (interactive)
  (elelem--ghost-take 'word))

(defun elelem-ghost-accept-line ()
  "Insert the ghost text up to its line's end; the rest stays shown."
  (interactive)
  (elelem--ghost-take 'line))

(defun elelem-ghost-next ()
  "Show the answer's next item, or ask again."
  (interactive)
  (let ((index (car elelem--ghost-items))
        (items (cdr elelem--ghost-items)))
    (if (> (length items) 1)
        (let ((next (mod (1+ index) (length items))))
          (setq elelem--ghost-items (cons next items))
          (elelem--ghost-show (nth next items)))
      (elelem--ghost-clear)
      (elelem--ghost-request 1))))

(defun elelem-ghost-dismiss ()
  "Hide the ghost text."
  (interactive)
  (elelem--ghost-clear))

;;;; Next edit

(defun elelem--next-edit-request ()
  (elelem--ask 'next-edit :elelem/nextEdit (eglot--TextDocumentPositionParams)
               (lambda (result)
                 (let ((edits (append (plist-get result :edits) nil)))
                   (when edits
                     (elelem--next-edit-show (plist-get result :id) edits))))))

(defun elelem--next-edit-show (id edits)
  "Show EDITS (LSP TextEdits) where they apply.
The old text struck through, the new text after it."
  (elelem--next-edit-clear)
  (let (overlays)
    (dolist (edit edits)
      (let* ((region (eglot--range-region (plist-get edit :range)))
             (overlay (make-overlay (car region) (cdr region))))
        (overlay-put overlay 'face 'elelem-next-edit-old-face)
        (overlay-put overlay 'after-string (propertize (plist-get edit :newText) 'face 'elelem-next-edit-new-face))
        (overlay-put overlay 'elelem-next-edit t)
        (push overlay overlays)))
    (setq elelem--next-edit (list :id id :edits edits :tick (buffer-chars-modified-tick)
                                  :overlays (sort overlays (lambda (a b) (< (overlay-start a) (overlay-start b))))))
    (message "elelem: next edit waiting: M-n jumps to it, M-RET accepts")))

(defun elelem--next-edit-clear ()
  (when elelem--next-edit
    (mapc #'delete-overlay (plist-get elelem--next-edit :overlays))
    (setq elelem--next-edit nil)))

(defun elelem--next-edit-current ()
  "The waiting next edit, if the buffer is still as it was made for."
  (when (and elelem--next-edit (/= (plist-get elelem--next-edit :tick) (buffer-chars-modified-tick)))
    (elelem--next-edit-clear))
  elelem--next-edit)

(defun elelem-next-edit-jump ()
  "Go to the next waiting edit after point's line, else the first."
  (interactive)
  (when-let ((waiting (elelem--next-edit-current)))
    (let ((overlays (plist-get waiting :overlays))
          (line-end (line-end-position)))
      (goto-char (overlay-start (or (cl-find-if (lambda (overlay) (> (overlay-start overlay) line-end)) overlays)
                                    (car overlays)))))))

(defun elelem-next-edit-accept ()
  "Apply every waiting edit as one undoable change, and record it.
The next one is asked for."
  (interactive)
  (when-let ((waiting (elelem--next-edit-current)))
    (elelem--next-edit-clear)
    (undo-boundary)
    (eglot--apply-text-edits (plist-get waiting :edits))
    (undo-boundary)
    (elelem--accepted (list :command "elelem.completionAccepted" :arguments (vector (list :id (plist-get waiting :id)))))
    (elelem--schedule 'next-edit elelem-next-edit-delay #'elelem--next-edit-request)))

(defun elelem-next-edit-dismiss ()
  "Hide the waiting next edit."
  (interactive)
  (elelem--next-edit-clear))

;;;; The mode

(defun elelem--suggest-after-command ()
  "After a change: ask for ghost text and the next edit once typing pauses."
  (unless (memq this-command elelem--suggest-commands)
    (let ((changed (/= elelem--suggest-tick (buffer-chars-modified-tick))))
      (setq elelem--suggest-tick (buffer-chars-modified-tick))
      (unless (and elelem--ghost (elelem--ghost-typed-along))
        (elelem--ghost-clear)
        (when changed
          (elelem--schedule 'ghost elelem-ghost-delay (lambda () (elelem--ghost-request 2)))))
      (when (and changed elelem-suggest-next-edit)
        (elelem--next-edit-clear)
        (elelem--schedule 'next-edit elelem-next-edit-delay #'elelem--next-edit-request)))))

;;;###autoload
(define-minor-mode elelem-suggest-mode
  "Ghost text and next edits from elelem-lsp in this buffer."
  :lighter nil
  (if elelem-suggest-mode
      (progn
        (setq elelem--suggest-tick (buffer-chars-modified-tick))
        (add-hook 'post-command-hook #'elelem--suggest-after-command nil t))
    (remove-hook 'post-command-hook #'elelem--suggest-after-command t)
    (elelem--ghost-clear)
    (elelem--next-edit-clear)))

(defun elelem--suggest-follow-eglot ()
  "`elelem-suggest-mode' while eglot manages this buffer for elelem-lsp."
  (elelem-suggest-mode (if (elelem--suggest-server) 1 -1)))

;;;###autoload
(defun elelem-suggest-setup ()
  "Turn `elelem-suggest-mode' on in every buffer eglot manages for elelem-lsp."
  (add-hook 'eglot-managed-mode-hook #'elelem--suggest-follow-eglot))

(provide 'elelem-suggest)
;;; elelem-suggest.el ends here
