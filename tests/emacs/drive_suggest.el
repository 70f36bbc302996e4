;;; drive_suggest.el --- a batch Emacs session using clients/emacs/elelem-suggest.el  -*- lexical-binding: t; -*-

;; Set before loading: `drive-root' (the workspace), `drive-file' (the file to open), `drive-out'
;; (where to write what was seen, as JSON), `drive-server' (the server command), `drive-client'
;; (clients/emacs), `drive-settings' (the elelem settings, a JSON string), `drive-scenario'.
;; Plays the scenario with the keys a person presses (`execute-kbd-macro', so the command loop and
;; its hooks run): "ghost" types after `return ', types along the suggestion, accepts a word of it,
;; then the rest, then dismisses
;; the next suggestion; "next-edit" renames a parameter, jumps to the suggested edit, accepts, undoes.

(require 'json)
(add-to-list 'load-path drive-client)
(require 'elelem-suggest)

(setq elelem-server-command drive-server
      elelem-modes '(text-mode prog-mode python-mode)  ; eglot 1.9 matches a buffer's mode exactly
      elelem-settings (let ((json-object-type 'plist) (json-array-type 'vector)) (json-read-from-string drive-settings))
      eglot-sync-connect t
      make-backup-files nil
      create-lockfiles nil)
(elelem-setup)
(elelem-suggest-setup)

(defun drive-wait (what predicate)
  "Wait for PREDICATE (at most 30 s); its value."
  (let ((deadline (+ (float-time) 30)) value)
    (while (and (not (setq value (funcall predicate))) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (or value (error "timed out waiting for %s" what))))

(defun drive-keys (keys)
  (execute-kbd-macro (kbd keys)))

(defun drive-ghost-shown ()
  "The ghost text as shown (the after-string of the overlay at point), or nil."
  (cl-loop for overlay in (overlays-in (point-min) (point-max))
           when (overlay-get overlay 'elelem-ghost)
           return (substring-no-properties (overlay-get overlay 'after-string))))

(defun drive-figures (key)
  "`elelem.context''s figures for KEY once they count one acceptance."
  (drive-wait (format "the %s acceptance recorded" key)
              (lambda ()
                (let ((figures (plist-get (jsonrpc-request (eglot-current-server) :workspace/executeCommand
                                                           (list :command "elelem.context" :arguments (vector eglot--{})))
                                          key)))
                  (and (equal (plist-get figures :accepted) 1) figures)))))

(defun drive-ghost (buffer)
  (let (seen)
    (goto-char (point-min))
    (forward-line 1)
    (end-of-line)
    (drive-keys "a")
    (push (list "shown" :ghost (drive-wait "the ghost text" #'drive-ghost-shown) :text (buffer-string)) seen)
    (drive-keys "SPC")  ; typing what it suggests
    (push (list "typed-along" :ghost (drive-ghost-shown) :text (buffer-string)) seen)
    (drive-keys "M-f")
    (push (list "word" :ghost (drive-ghost-shown) :text (buffer-string)) seen)
    (drive-keys "TAB")
    (push (list "accepted" :ghost (drive-ghost-shown) :text (buffer-string)) seen)
    (let ((figures (drive-figures :completion)))
      (push (list "figures" :accepted (plist-get figures :accepted) :chars (plist-get figures :charsAccepted)) seen))
    (drive-keys "SPC")
    (drive-wait "the next ghost text" #'drive-ghost-shown)
    (drive-keys "C-g")
    (push (list "dismissed" :ghost (drive-ghost-shown) :text (with-current-buffer buffer (buffer-string))) seen)
    seen))

(defun drive-next-edit-overlays ()
  "[line, old text, new text] of each waiting edit, in the buffer's order."
  (vconcat
   (cl-loop for overlay in (sort (cl-remove-if-not (lambda (o) (overlay-get o 'elelem-next-edit))
                                                   (overlays-in (point-min) (point-max)))
                                 (lambda (a b) (< (overlay-start a) (overlay-start b))))
            collect (vector (line-number-at-pos (overlay-start overlay))
                            (buffer-substring-no-properties (overlay-start overlay) (overlay-end overlay))
                            (substring-no-properties (overlay-get overlay 'after-string))))))

(defun drive-next-edit (_buffer)
  (let (seen)
    (goto-char (point-min))
    (forward-char 18)
    (drive-keys "M-d")  ; kill-word: "scale"
    (drive-keys "factor")
    (push (list "typed" :text (buffer-string)) seen)
    (drive-wait "the next edit" (lambda () (> (length (drive-next-edit-overlays)) 0)))
    (push (list "shown" :edits (drive-next-edit-overlays) :text (buffer-string)) seen)
    (drive-keys "M-n")
    (push (list "jumped" :line (line-number-at-pos)) seen)
    (drive-keys "M-RET")
    (push (list "accepted" :text (buffer-string) :edits (drive-next-edit-overlays)) seen)
    (drive-figures :nextEdit)
    (undo-boundary)
    (let ((last-command nil)) (undo))  ; one undo takes the accepted edits back
    (push (list "undone" :text (buffer-string)) seen)
    seen))

(let* ((buffer (find-file-noselect (expand-file-name drive-file drive-root)))
       (seen (progn
               (switch-to-buffer buffer)
               (condition-case err
                   (progn
                     (elelem--server)
                     (drive-wait "eglot to manage the buffer" (lambda () elelem-suggest-mode))
                     (funcall (intern (concat "drive-" drive-scenario)) buffer))
                 (error
                  (message "the last LSP messages:\n%s"
                           (with-current-buffer (jsonrpc-events-buffer (elelem--server))
                             (buffer-substring-no-properties (max (point-min) (- (point-max) 6000)) (point-max))))
                  (signal (car err) (cdr err)))))))
  (with-temp-file drive-out
    (insert (json-encode (nreverse seen))))
  (ignore-errors (eglot-shutdown (elelem--server))))

;;; drive_suggest.el ends here
