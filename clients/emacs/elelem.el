;;; elelem.el --- elelem-lsp, a coding agent, through eglot  -*- lexical-binding: t; -*-

;; Package-Requires: ((emacs "28.1") (eglot "1.9"))

;;; Commentary:

;; Bridges eglot to elelem-lsp: an eglot server class whose `eglot-execute-command' streams the
;; turns of `elelem.ask' / `elelem.fix' (from the commands below or from `eglot-code-actions')
;; into the *elelem* transcript, draws stored conversations there (`elelem.resume',
;; `elelem.transcript'), renders the `events' of the server's `$/progress' reports, answers
;; `elelem/input' with the minibuffer, applies `workspace/applyEdit' (creating files too) as
;; ordinary undoable buffer edits, and answers `workspace/configuration' from `elelem-settings'
;; (which a folder's .dir-locals.el may set).
;;
;;   (require 'elelem)
;;   (setq elelem-settings '(:provider "openai" :model "gpt-4o-mini"))
;;   (elelem-setup)
;;
;; Commands: `elelem-ask' (the region, if active), `elelem-fix' (flymake's diagnostics of the
;; region or line), `elelem-select-provider', `elelem-cancel', `elelem-new-conversation' (or
;; `elelem-reset'), `elelem-conversations', `elelem-delete-conversation', `elelem-transcript',
;; `elelem-usage'.

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'project)
(require 'subr-x)

(defgroup elelem nil "A coding agent in the editor (elelem-lsp)." :group 'tools)

(defcustom elelem-server-command '("elelem-lsp" "serve")
  "How to start the language server."
  :type '(repeat string))

(defcustom elelem-settings nil
  "The `elelem' settings section, a plist.
Keys: :provider :model :providers :execute :allowCommands :confirmEdits
:workspacePlugins :maxSteps :temperature :maxTokens :mcpServers :allowMcpTools :mcp
:sandbox :sandboxNetwork :sandboxWritable.  Set it per folder in
.dir-locals.el to give folders different providers."
  :type 'plist)

;;;###autoload
(defun elelem-safe-settings-p (value)
  "Non-nil when settings VALUE loosen nothing, so a .dir-locals.el may set them unasked.
A project's own files choosing :workspacePlugins, :allowCommands, :providers,
:mcpServers, :allowMcpTools, :checkCommand, :execute \"allow\", :mcp \"allow\",
:sandbox \"off\", :sandboxNetwork or :sandboxWritable is a question Emacs asks
first (answer ! to trust that project)."
  (and (proper-list-p value)
       (ignore-errors
         (not (or (plist-get value :workspacePlugins)
                  (plist-get value :allowCommands)
                  (plist-get value :providers)
                  (plist-get value :mcpServers)
                  (plist-get value :allowMcpTools)
                  (plist-get value :checkCommand)
                  (plist-get value :sandboxNetwork)
                  (plist-get value :sandboxWritable)
                  (equal (plist-get value :execute) "allow")
                  (equal (plist-get value :mcp) "allow")
                  (equal (plist-get value :sandbox) "off"))))))
;;;###autoload
(put 'elelem-settings 'safe-local-variable #'elelem-safe-settings-p)

(defcustom elelem-modes '(text-mode prog-mode)
  "Major modes whose buffers eglot hands to elelem-lsp.
Modes derived from them count too, unless an earlier entry of
`eglot-server-programs' claims them."
  :type '(repeat symbol))

(defface elelem-prompt-face '((t :inherit bold)) "A prompt in the transcript.")
(defface elelem-thinking-face '((t :inherit shadow :slant italic)) "The model's thinking.")
(defface elelem-tool-face '((t :inherit font-lock-function-name-face)) "A tool call.")
(defface elelem-tool-ok-face '((t :inherit success)) "A tool that succeeded.")
(defface elelem-error-face '((t :inherit error)) "A failed tool or turn.")
(defface elelem-footer-face '((t :inherit shadow)) "The provider line ending a turn.")
(defface elelem-note-face '((t :inherit shadow))
  "What the server left out of the context or compacted into a summary.")

(defclass elelem-server (eglot-lsp-server) ()
  :documentation "An eglot connection to elelem-lsp.")

;;;; The transcript

(defvar elelem--turns (make-hash-table :test #'equal)
  "Running turns by progress token: a plist (:open KIND :said BOOL).")
(defvar elelem--token-count 0)
(defvar elelem-turn-done-hook nil
  "Run with the command's result plist (or error message string) when a turn ends.")

(define-derived-mode elelem-transcript-mode special-mode "elelem"
  "The conversation with elelem, as it streams.")

(defun elelem--transcript ()
  "The transcript buffer."
  (or (get-buffer "*elelem*")
      (with-current-buffer (get-buffer-create "*elelem*")
        (elelem-transcript-mode)
        (current-buffer))))

(defun elelem--write (text &optional face continue)
  "Write TEXT at the end of the transcript in FACE, on the last line when CONTINUE."
  (with-current-buffer (elelem--transcript)
    (let ((inhibit-read-only t))
      (goto-char (point-max))
      (unless (or continue (bobp)) (insert "\n"))
      (insert (if face (propertize text 'face face 'font-lock-face face) text)))
    (dolist (window (get-buffer-window-list (current-buffer) nil t))
      (set-window-point window (point-max)))))

(defun elelem--format-arguments (arguments)
  "A tool call's ARGUMENTS plist as `key=json' pairs; anything else as its JSON."
  (if (not (and (consp arguments) (keywordp (car arguments))))
      (if arguments (jsonrpc--json-encode arguments) "")
    (mapconcat (lambda (pair)
                 (let ((value (jsonrpc--json-encode (cadr pair))))
                   (format "%s=%s" (substring (symbol-name (car pair)) 1)
                           (if (> (length value) 120) (concat (substring value 0 117) "...") value))))
               (seq-partition arguments 2) ", ")))

(defun elelem--one-line (text)
  (replace-regexp-in-string "\n" " " text))

(defun elelem--words (value)
  "VALUE when it is a non-empty string: words the server sent to be shown as they are."
  (and (stringp value) (not (string-empty-p value)) value))

(defun elelem--call-line (call)
  "`+ Read a.txt', the server's title of CALL; without one `+ name(key=value, ...)'."
  (let ((name (plist-get call :name)))
    (if-let ((title (elelem--words (plist-get call :title))))
        (concat "+ " title)
      (format "+ %s(%s)" (if (stringp name) name "?") (elelem--format-arguments (plist-get call :arguments))))))

(defun elelem--outcome-line (outcome)
  "`  ok: title — summary' or `  failed: title: error' for OUTCOME, with its face.
The tool's name stands for the title when the server sent none."
  (let ((name (or (elelem--words (plist-get outcome :title))
                  (if (stringp (plist-get outcome :name)) (plist-get outcome :name) "?")))
        (summary (plist-get outcome :summary))
        (error (plist-get outcome :error)))
    (if (eq (plist-get outcome :ok) t)
        (cons (concat "  ok: " name (if (and (stringp summary) (not (string-empty-p summary)))
                                        (concat " — " (elelem--one-line summary))
                                      ""))
              'elelem-tool-ok-face)
      (cons (format "  failed: %s: %s" name (elelem--one-line (if (stringp error) error "error")))
            'elelem-error-face))))

(defun elelem--counted (count noun)
  (format "%d %s%s" count noun (if (equal count 1) "" "s")))

(defun elelem--thousands (number)
  "NUMBER with thousands separators: 32000 -> \"32,000\"."
  (let ((digits (number-to-string (truncate number))))
    (while (string-match "\\([0-9]\\)\\([0-9]\\{3\\}\\)\\($\\|,\\)" digits)
      (setq digits (replace-match "\\1,\\2\\3" t nil digits)))
    digits))

(defun elelem-note-text (event)
  "The one dim line of a `context' or `compacted' EVENT, or of a compaction entry.
The server's text, else worded here; nil when it says nothing."
  (cond
   ((elelem--words (plist-get event :text)) (concat "-- " (plist-get event :text)))
   ((or (equal (plist-get event :type) "compacted") (equal (plist-get event :kind) "compaction"))
    (let ((turns (plist-get event :turns)))
      (and (numberp turns)
           (format "-- %s compacted into a summary" (elelem--counted turns "turn")))))
   (t
    (let* ((left-out (plist-get event :leftOut))
           (shortened (plist-get event :shortened))
           (budget (plist-get event :budget))
           (parts (delq nil (list (and (numberp left-out) (> left-out 0)
                                       (concat (elelem--counted left-out "earlier turn") " left out"))
                                  (and (numberp shortened) (> shortened 0)
                                       (concat (elelem--counted shortened "tool result") " shortened"))))))
      (and parts
           (concat "-- " (string-join parts ", ")
                   (if (numberp budget) (format " to fit %s tokens" (elelem--thousands budget)) "")))))))

(defun elelem-checked-lines (event)
  "The lines of a `checked' EVENT, as (TEXT . FACE).
Its row, then the new problems (or the end of the check command's output),
at most ten."
  (let* ((problems (append (plist-get event :newProblems) nil))
         (output (plist-get event :output))
         (details (append (mapcar (lambda (p)
                                    (format "    %s:%s:%s %s: %s" (plist-get p :path) (plist-get p :line)
                                            (plist-get p :column) (plist-get p :severity)
                                            (elelem--one-line (or (plist-get p :message) ""))))
                                  problems)
                          (and (stringp output) (not (string-empty-p (string-trim output)))
                               (mapcar (lambda (line) (concat "    " line))
                                       (last (split-string (string-trim output) "\n") 10)))))
         (bad (or problems (and (numberp (plist-get event :exitCode)) (/= (plist-get event :exitCode) 0)))))
    (cons (cons (concat "✓ " (or (plist-get event :text) "checked"))
                (if bad 'elelem-error-face 'elelem-tool-ok-face))
          (mapcar (lambda (line) (cons line 'elelem-note-face)) (seq-take details 10)))))

(defun elelem-plan-lines (event)
  "The lines of a `plan' EVENT, as (TEXT . FACE).
`Plan:', then a `[x]' done, `[~]' in progress or `[ ]' to do line per entry."
  (let ((entries (plist-get event :entries)))
    (cons (cons "Plan:" 'elelem-tool-face)
          (delq nil (mapcar (lambda (entry)
                              (let ((content (and (consp entry) (plist-get entry :content))))
                                (and (stringp content)
                                     (pcase (plist-get entry :status)
                                       ("completed" (cons (concat "  [x] " (elelem--one-line content)) 'elelem-tool-ok-face))
                                       ("in_progress" (cons (concat "  [~] " (elelem--one-line content)) 'elelem-tool-face))
                                       (_ (cons (concat "  [ ] " (elelem--one-line content)) nil))))))
                            (and (sequencep entries) (not (stringp entries)) (append entries nil)))))))

(defun elelem--show-plan (turn lines)
  "Draw TURN's plan LINES: at the end the first time, over its last plan after that.
Return TURN with markers around the plan."
  (let ((start (plist-get turn :plan-start)))
    (if (not (and (markerp start) (marker-buffer start)))
        (with-current-buffer (elelem--transcript)
          (dolist (line lines) (elelem--write (car line) (cdr line)))
          (let ((end (copy-marker (point-max))))
            (save-excursion
              (goto-char end)
              (forward-line (- 1 (length lines)))
              (plist-put (plist-put turn :plan-start (copy-marker (line-beginning-position))) :plan-end end))))
      (with-current-buffer (marker-buffer start)
        (let ((inhibit-read-only t))
          (save-excursion
            (goto-char start)
            (delete-region start (plist-get turn :plan-end))
            (insert (mapconcat (lambda (line)
                                 (if (cdr line) (propertize (car line) 'face (cdr line) 'font-lock-face (cdr line)) (car line)))
                               lines "\n"))
            (set-marker (plist-get turn :plan-end) (point))
            turn))))))

(defun elelem-usage-line (event)
  "The dim line of the host's `usage' EVENT at a turn's end.
Nil for a provider's (no text) and for a turn no provider counted (the stub, a failed request)."
  (when-let ((text (elelem--words (plist-get event :text))))
    (when (> (+ (or (plist-get event :inputTokens) 0) (or (plist-get event :outputTokens) 0)) 0)
      (concat "-- " (elelem--one-line text)))))

(defun elelem-conversation-usage (usage)
  "The conversation's figures in USAGE (a plist of `elelem.context'), as words.
The server's `conversationText', else (an older server) worded here:
\"12,345 in · 2,345 out · context 3,000 of 128,000 · $0.12\"."
  (or (elelem--words (plist-get usage :conversationText))
      (elelem--conversation-words usage)))

(defun elelem--conversation-words (usage)
  "USAGE's figures as an older server's `elelem.context' gives them, as words."
  (let* ((count (lambda (value) (elelem--thousands (if (and (numberp value) (>= value 0)) value 0))))
         (window (plist-get usage :contextWindow))
         (cost (plist-get usage :cost))
         (currency (or (elelem--words (plist-get usage :currency)) "USD"))
         (figure (and (numberp cost) (format (if (< cost 0.01) "%.4f" "%.2f") cost))))
    (string-join
     (delq nil (list (concat (funcall count (plist-get usage :conversationInputTokens)) " in")
                     (concat (funcall count (plist-get usage :conversationOutputTokens)) " out")
                     (concat "context " (funcall count (plist-get usage :contextTokens))
                             (if (and (numberp window) (> window 0)) (concat " of " (funcall count window)) ""))
                     (and figure (if (equal currency "USD") (concat "$" figure) (concat figure " " currency)))))
     " · ")))

(defun elelem--ending-lines (outcome with-reply)
  "The lines ending a turn, as (TEXT . FACE), from OUTCOME.
OUTCOME is a result plist or a stored turn.  The reply when WITH-REPLY (and no
error carried it), the error, and the footer in the server's words (its `text':
\"done — scripted · 2 steps\"); an older server's OUTCOME without them gets
`[cancelled]' and a footer with the provider, model and steps worded here."
  (let* ((reply (plist-get outcome :reply)) (error (plist-get outcome :error))
         (said (elelem--words (plist-get outcome :text)))
         (footer (if said (list said)
                   (delq nil (list (plist-get outcome :provider) (plist-get outcome :model)
                                   (elelem--steps outcome))))))
    (delq nil
          (list (and with-reply (stringp reply) (not (string-empty-p reply)) (not (stringp error))
                     (cons reply nil))
                (and (stringp error) (not (string-empty-p error))
                     (cons (if (string-prefix-p "Error:" error) error (concat "Error: " error))
                           'elelem-error-face))
                (and (not said) (eq (plist-get outcome :cancelled) t) (cons "[cancelled]" 'elelem-error-face))
                (and (cl-every #'stringp footer) footer
                     (cons (concat "-- " (elelem--one-line (string-join footer " · "))) 'elelem-footer-face))))))

(defun elelem--entry-lines (entry)
  "The lines of a stored ENTRY, as (TEXT . FACE).
A turn (its prompt, tool calls with the check after a step, plan, reply and
footer), or the one line of any other entry the server words (a compaction, a
reset, a rewind: its `text'; an older server's compaction is worded here); none
for an entry without words."
  (pcase (plist-get entry :kind)
    ("turn"
     (let* ((plan (plist-get entry :plan))
            (usage (plist-get entry :usage))
            (row (and (consp usage) (elelem-usage-line usage)))
            (ending (elelem--ending-lines entry t))
            (footer (and (eq (cdr (car (last ending))) 'elelem-footer-face) (last ending))))
       (append (list (cons (concat "> " (elelem--one-line (or (plist-get entry :prompt) "")))
                           'elelem-prompt-face))
               (seq-mapcat (lambda (tool)
                             (let ((checked (plist-get tool :checked)))  ; the event as it came live
                               (append (list (cons (elelem--call-line tool) 'elelem-tool-face)
                                             ;; the result's own title ("Ran npm test"), as its row said it live
                                             (elelem--outcome-line
                                              (append (list :title (or (elelem--words (plist-get tool :outcomeTitle))
                                                                       (plist-get tool :title)))
                                                      tool)))
                                       (and (consp checked) (elelem-checked-lines checked)))))
                           (plist-get entry :tools) 'list)
               (and plan (sequencep plan) (not (stringp plan)) (elelem-plan-lines (list :entries plan)))
               ;; the usage row where the turn's usage event put it: before the footer
               (butlast ending (length footer))
               (and row (list (cons row 'elelem-note-face)))
               footer)))
    ((or "compaction" (guard (elelem--words (plist-get entry :text))))
     (let ((note (elelem-note-text entry))) (and note (list (cons note 'elelem-note-face)))))))

(defun elelem--clear-transcript ()
  "Empty the transcript; turns still running go on writing on fresh lines."
  (with-current-buffer (elelem--transcript)
    (let ((inhibit-read-only t)) (erase-buffer)))
  (dolist (turn (hash-table-values elelem--turns)) (plist-put (plist-put turn :open nil) :plan-start nil)))

(defun elelem-show-conversation (conversation)
  "Redraw the transcript as the stored CONVERSATION plist (:id :title :entries)."
  (elelem--clear-transcript)
  (let ((first t))
    (seq-doseq (entry (plist-get conversation :entries))
      (let ((lines (elelem--entry-lines entry)))
        (when (and lines (not first) (equal (plist-get entry :kind) "turn"))
          (elelem--write ""))
        (dolist (line lines)
          (elelem--write (car line) (cdr line)))
        (when lines (setq first nil))))))

(defun elelem--start-turn (token heading)
  "Begin the turn TOKEN in the transcript with HEADING."
  (puthash token (list :open nil :said nil) elelem--turns)
  (with-current-buffer (elelem--transcript)
    (unless (bobp) (elelem--write "")))
  (elelem--write (concat "> " (replace-regexp-in-string "\n" " " heading)) 'elelem-prompt-face)
  (display-buffer (elelem--transcript) '(display-buffer-at-bottom (window-height . 0.3))))

(defun elelem--render-events (token events)
  "Render the EVENTS vector of one report of turn TOKEN."
  (when-let ((turn (gethash token elelem--turns)))
    (seq-doseq (event events)
      (let ((kind (plist-get event :type)))
        (pcase kind
          ((or "saying" "thinking")
           (let ((text (or (plist-get event :text) "")))
             (unless (string-empty-p text)
               (elelem--write text (and (equal kind "thinking") 'elelem-thinking-face)
                              (equal (plist-get turn :open) kind))
               (setq turn (plist-put turn :open kind))
               (when (equal kind "saying") (setq turn (plist-put turn :said t))))))
          ("doing"
           (elelem--write (elelem--call-line event) 'elelem-tool-face)
           (setq turn (plist-put turn :open nil)))
          ("result"
           (let ((line (elelem--outcome-line event)))
             (elelem--write (car line) (cdr line)))
           (setq turn (plist-put turn :open nil)))
          ("checked"
           (dolist (line (elelem-checked-lines event))
             (elelem--write (car line) (cdr line)))
           (setq turn (plist-put turn :open nil)))
          ("plan"
           (setq turn (plist-put (elelem--show-plan turn (elelem-plan-lines event)) :open nil)))
          ("usage"
           (when-let ((line (elelem-usage-line event)))
             (elelem--write line 'elelem-note-face)
             (setq turn (plist-put turn :open nil))))
          ((or "context" "compacted")
           (when-let ((note (elelem-note-text event)))
             (elelem--write note 'elelem-note-face)
             (setq turn (plist-put turn :open nil)))))))  ; other types: a newer server's, skipped
    (puthash token turn elelem--turns)))

(defun elelem--steps (result)
  "\"N steps\" of RESULT, if it says."
  (when-let ((steps (plist-get result :steps)))
    (format "%s step%s" steps (if (equal steps 1) "" "s"))))

(defun elelem--finish-turn (token result)
  "End turn TOKEN with RESULT: the result plist, or an error message."
  (let ((turn (gethash token elelem--turns)))
    (remhash token elelem--turns)
    (if (stringp result)
        (elelem--write (concat "Error: " result) 'elelem-error-face)
      (dolist (line (elelem--ending-lines result (not (plist-get turn :said))))
        (elelem--write (car line) (cdr line))))
    (run-hook-with-args 'elelem-turn-done-hook result)))

;;;; The server side of the conversation

(cl-defmethod eglot-client-capabilities ((_server elelem-server))
  "Eglot's, plus what elelem's applyEdit handler does: create files, confirm.
And `elelem/diagnostics', answered from Flymake (or Flycheck)."
  (let* ((capabilities (cl-call-next-method))
         (workspace (plist-get capabilities :workspace)))
    (plist-put capabilities :experimental
               (list :elelem (list :diagnostics t)))
    (plist-put capabilities :workspace
               (plist-put workspace :workspaceEdit
                          '(:documentChanges t :resourceOperations ["create"]
                            :changeAnnotationSupport (:groupsOnLabel :json-false))))))

;;;; What the buffers' other checkers report (`elelem/diagnostics')

(defvar elelem--diagnostics-generation 0
  "How many times Flymake or Flycheck reported, in any buffer.")
(defvar-local elelem--diagnostics-changed nil
  "(GENERATION . TIME) of this buffer's last report.")

(defun elelem--diagnostics-reported (&rest _)
  "Count a Flymake or Flycheck report of the current buffer."
  (setq elelem--diagnostics-generation (1+ elelem--diagnostics-generation))
  (setq elelem--diagnostics-changed (cons elelem--diagnostics-generation (float-time))))

(with-eval-after-load 'flymake
  ;; Flymake has no hook after a report; its report function is where every backend's lands
  (when (fboundp 'flymake--handle-report)
    (advice-add 'flymake--handle-report :after #'elelem--diagnostics-reported)))
(add-hook 'flycheck-after-syntax-check-hook #'elelem--diagnostics-reported)

(defconst elelem--settle-seconds 0.2 "Reports quiet this long count as settled.")

(declare-function flycheck-error-line "ext:flycheck")
(declare-function flycheck-error-column "ext:flycheck")
(declare-function flycheck-error-message "ext:flycheck")
(declare-function flycheck-error-level "ext:flycheck")
(declare-function flycheck-error-checker "ext:flycheck")
(declare-function flycheck-buffer "ext:flycheck")

(defun elelem--buffer-diagnostics (buffer)
  "The LSP diagnostics of BUFFER: Flymake's, and Flycheck's where it runs."
  (with-current-buffer buffer
    (append
     (and (bound-and-true-p flymake-mode)
          (mapcar (lambda (d)
                    (list :range (elelem--range (flymake-diagnostic-beg d) (flymake-diagnostic-end d))
                          :message (flymake-diagnostic-text d)
                          :severity (pcase (flymake-diagnostic-type d)
                                      ((or :error 'eglot-error) 1)
                                      ((or :warning 'eglot-warning) 2)
                                      (_ 3))
                          :source (format "%s" (flymake-diagnostic-backend d))))
                  (flymake-diagnostics)))
     (and (bound-and-true-p flycheck-mode) (fboundp 'flycheck-error-line)
          (mapcar (lambda (e)
                    (let ((position (save-excursion
                                      (goto-char (point-min))
                                      (forward-line (1- (or (flycheck-error-line e) 1)))
                                      (forward-char (max 0 (1- (or (flycheck-error-column e) 1))))
                                      (point))))
                      (list :range (elelem--range position position)
                            :message (or (flycheck-error-message e) "")
                            :severity (pcase (flycheck-error-level e) ('error 1) ('warning 2) (_ 3))
                            :source (format "%s" (flycheck-error-checker e)))))
                  (bound-and-true-p flycheck-current-errors))))))

(defun elelem--checked-p (buffer)
  "Whether something reports problems for BUFFER.
Flycheck, or Flymake with a backend other than elelem's own eglot connection."
  (and buffer
       (with-current-buffer buffer
         (or (bound-and-true-p flycheck-mode)
             (and (bound-and-true-p flymake-mode)
                  (or (not (cl-typep (eglot-current-server) 'elelem-server))
                      (cl-some (lambda (backend) (not (memq backend '(t eglot-flymake-backend))))
                               flymake-diagnostic-functions)))))))

(defun elelem--settled-p (buffers since)
  "Whether all BUFFERS reported after generation SINCE, and have been quiet since."
  (let ((last 0))
    (and (cl-every (lambda (buffer)
                     (let ((changed (and buffer (buffer-local-value 'elelem--diagnostics-changed buffer))))
                       (cond ((not (elelem--checked-p buffer)) t)  ; nothing to wait for
                             ((and changed (> (car changed) since))
                              (setq last (max last (cdr changed)))))))
                   buffers)
         (>= (- (float-time) last) elelem--settle-seconds))))

(cl-defmethod eglot-handle-request
  ((_server elelem-server) (_method (eql elelem/diagnostics)) &key uris waitMs since &allow-other-keys)
  "The problems of URIS (else of every buffer): Flymake's and Flycheck's.
With WAITMS, first wait for reports newer than generation SINCE, at most
that long."
  (let* ((uris (append uris nil))  ; a JSON array is a vector
         (buffers (if uris
                      (mapcar (lambda (uri) (find-buffer-visiting (elelem--uri-to-path uri))) uris)
                    (cl-remove-if-not #'buffer-file-name (buffer-list))))
         (since (if (numberp since) since elelem--diagnostics-generation))
         (deadline (+ (float-time) (/ (if (numberp waitMs) waitMs 0) 1000.0))))
    (when (and uris (numberp waitMs) (> waitMs 0))
      ;; check the changed buffers now: their checkers would, after an idle delay that never
      ;; comes while this request waits
      (dolist (buffer buffers)
        (when buffer
          (with-current-buffer buffer
            (cond ((bound-and-true-p flymake-mode) (flymake-start))
                  ((and (bound-and-true-p flycheck-mode) (fboundp 'flycheck-buffer)) (flycheck-buffer)))))))
    (while (and uris (< (float-time) deadline) (not (elelem--settled-p buffers since)))
      (accept-process-output nil 0.05))
    (list :items (apply #'vector
                        (cl-loop for buffer in buffers
                                 for uri in (or uris (mapcar (lambda (b) (elelem--path-to-uri (buffer-file-name b))) buffers))
                                 collect (list :uri uri
                                               :diagnostics (apply #'vector (and buffer (elelem--buffer-diagnostics buffer)))
                                               :checked (if (elelem--checked-p buffer) t :json-false))))
          :generation elelem--diagnostics-generation)))

(cl-defmethod eglot-handle-notification
  ((_server elelem-server) (_method (eql $/progress)) &key token value)
  "Render the events of elelem's reports; echo their rolling message."
  (let ((kind (plist-get value :kind)))
    (when (and (equal kind "report") (gethash token elelem--turns))
      (elelem--render-events token (plist-get value :events)))
    (when (and (plist-get value :message) (not (equal kind "end")))
      (let ((message-log-max nil))
        (message "elelem: %s" (plist-get value :message))))))

(cl-defmethod eglot-handle-request
  ((_server elelem-server) (_method (eql elelem/input)) &key prompt)
  "The human provider: a line typed in the minibuffer, null if dismissed."
  (condition-case nil
      (list :text (read-string (concat (or prompt "elelem") " ")))
    (quit nil)))

(defun elelem--uri-to-path (uri)
  (if (fboundp 'eglot-uri-to-path) (eglot-uri-to-path uri) (eglot--uri-to-path uri)))

(defun elelem--path-to-uri (path)
  (if (fboundp 'eglot-path-to-uri) (eglot-path-to-uri path) (eglot--path-to-uri path)))

(defun elelem--edit-summary (edit)
  "\"create a.txt, edit b.txt\" for the changes of EDIT."
  (mapconcat (lambda (change)
               (if (equal (plist-get change :kind) "create")
                   (concat "create " (file-relative-name
                                      (elelem--uri-to-path (plist-get change :uri))))
                 (concat "edit " (file-relative-name
                                  (elelem--uri-to-path
                                   (plist-get (plist-get change :textDocument) :uri))))))
             (plist-get edit :documentChanges) ", "))

(cl-defmethod eglot-handle-request
  ((_server elelem-server) (_method (eql workspace/applyEdit)) &key edit &allow-other-keys)
  "Apply EDIT: files to create, then text edits, each undoable.
Asks first only when a change annotation needs confirmation (`confirmEdits')."
  (condition-case err
      (progn
        (when (and (cl-loop for (_id annotation) on (plist-get edit :changeAnnotations) by #'cddr
                            thereis (eq (plist-get annotation :needsConfirmation) t))
                   (not (y-or-n-p (format "elelem wants to %s.  Apply? "
                                          (elelem--edit-summary edit)))))
          (error "Refused by the user"))
        (seq-doseq (change (plist-get edit :documentChanges))
          (if (equal (plist-get change :kind) "create")
              (let ((path (elelem--uri-to-path (plist-get change :uri)))
                    (options (plist-get change :options)))
                (unless (and (file-exists-p path)
                             (eq (plist-get options :ignoreIfExists) t))
                  (make-directory (file-name-directory path) t)
                  (write-region "" nil path nil 'silent)))
            (let* ((document (plist-get change :textDocument))
                   (path (elelem--uri-to-path (plist-get document :uri))))
              (with-current-buffer (find-file-noselect path)
                (eglot--apply-text-edits (plist-get change :edits)
                                         (plist-get document :version))))))
        (cl-loop for (uri edits) on (plist-get edit :changes) by #'cddr
                 do (with-current-buffer
                        (find-file-noselect (elelem--uri-to-path (substring (symbol-name uri) 1)))
                      (eglot--apply-text-edits edits)))
        (list :applied t))
    (error (list :applied :json-false :failureReason (error-message-string err)))))

(defun elelem--settings-for (directory)
  "`elelem-settings' as DIRECTORY's .dir-locals.el leave it."
  (with-temp-buffer
    (setq default-directory (file-name-as-directory directory))
    (hack-dir-local-variables-non-file-buffer)
    (or elelem-settings eglot--{})))

(cl-defmethod eglot-initialization-options ((server elelem-server))
  "The folder's settings, with `:client' telling the server this client renders the turn."
  (let ((settings (elelem--settings-for (project-root (eglot--project server)))))
    (append (list :client "elelem-emacs") (and (listp settings) settings))))

(cl-defmethod eglot-handle-request
  ((server elelem-server) (_method (eql workspace/configuration)) &key items)
  "The `elelem' section for each item's folder."
  (apply #'vector
         (mapcar (lambda (item)
                   (let* ((scope (plist-get item :scopeUri))
                          (path (and scope (elelem--uri-to-path scope))))
                     (if (equal (plist-get item :section) "elelem")
                         (elelem--settings-for
                          (if (and path (file-directory-p path)) path
                            (project-root (eglot--project server))))
                       nil)))
                 items)))

(cl-defmethod eglot-execute-command ((server elelem-server) command arguments)
  "Run COMMAND with ARGUMENTS on SERVER.
Turns (`elelem.ask', `elelem.fix') run asynchronously, streaming into the
transcript; other commands return the server's result."
  ;; the agent reads and edits unsaved buffers: send the changes eglot still holds back
  (dolist (buffer (eglot--managed-buffers server))
    (with-current-buffer buffer (eglot--signal-textDocument/didChange)))
  (let ((name (format "%s" command)))
    (if (not (member name '("elelem.ask" "elelem.fix")))
        (cl-call-next-method)
      (let* ((argument (copy-sequence (or (and (> (length arguments) 0) (aref arguments 0))
                                          (list))))
             (token (format "elelem.el/%d/%d" (emacs-pid) (cl-incf elelem--token-count))))
        (setq argument (plist-put argument :progressToken token))
        (elelem--start-turn token (or (plist-get argument :prompt)
                                      (concat "Fix: " (mapconcat
                                                       (lambda (d) (plist-get d :message))
                                                       (plist-get argument :diagnostics)
                                                       "; "))))
        (jsonrpc-async-request
         server :workspace/executeCommand (list :command name :arguments (vector argument))
         :success-fn (lambda (result) (elelem--finish-turn token result))
         :error-fn (lambda (error) (elelem--finish-turn token (or (plist-get error :message)
                                                                  (format "%S" error))))
         :timeout nil)
        token))))

;;;; Commands

(defun elelem--server ()
  "The elelem server of the current project; starts one if there is none."
  (let ((current (eglot-current-server)))
    (if (cl-typep current 'elelem-server)
        current
      (let ((project (or (project-current) (cons 'transient default-directory))))
        (or (elelem--project-server project)
            (let ((root (project-root project)))
              ;; from a buffer no other server manages, so `eglot' replaces nothing
              (with-temp-buffer
                (setq default-directory root)
                (eglot elelem-modes project 'elelem-server elelem-server-command "elelem"))
              (or (elelem--project-server project)
                  (user-error "elelem: the server did not start"))))))))

(defun elelem--project-server (project)
  (cl-find-if (lambda (server) (cl-typep server 'elelem-server))
              (gethash project eglot--servers-by-project)))

(defun elelem--range (beg end)
  "The LSP range from BEG to END in the current buffer."
  (list :start (eglot--pos-to-lsp-position beg) :end (eglot--pos-to-lsp-position end)))

(defun elelem--uri ()
  (and buffer-file-name (elelem--path-to-uri buffer-file-name)))

(defun elelem--execute (command argument)
  "Run elelem COMMAND with ARGUMENT (a plist, nil values left out).
The server's refusal (a turn running, an unknown id) is a `user-error' with
its message."
  (let ((present (cl-loop for (key value) on argument by #'cddr
                          when value append (list key value))))
    (condition-case err
        (eglot-execute-command (elelem--server) command (vector (or present eglot--{})))
      (jsonrpc-error
       (user-error "elelem: %s" (or (alist-get 'jsonrpc-error-message (cddr err)) (cadr err)))))))

;;;###autoload
(defun elelem-ask (prompt &optional beg end)
  "Ask elelem PROMPT; interactively, about the region when it is active (BEG END)."
  (interactive
   (let ((region (use-region-p)))
     (list (read-string (if region "Ask elelem about the region: " "Ask elelem: "))
           (and region (region-beginning)) (and region (region-end)))))
  (let ((argument (list :prompt prompt)))
    (when-let ((uri (elelem--uri)))
      (setq argument (plist-put argument :uri uri))
      (when (and beg end)
        (setq argument (plist-put argument :range (elelem--range beg end)))))
    (elelem--execute 'elelem.ask argument)))

;;;###autoload
(defun elelem-fix (beg end)
  "Fix the problems flymake reports between BEG and END (the region or line)."
  (interactive (if (use-region-p) (list (region-beginning) (region-end))
                 (list (line-beginning-position) (line-end-position))))
  (unless buffer-file-name (user-error "elelem: this buffer visits no file"))
  (elelem--execute
   'elelem.fix
   (list :uri (elelem--uri)
         :range (elelem--range beg end)
         :diagnostics
         (vconcat
          (mapcar (lambda (diagnostic)
                    (list :range (elelem--range (flymake-diagnostic-beg diagnostic)
                                                (flymake-diagnostic-end diagnostic))
                          :message (flymake-diagnostic-text diagnostic)
                          :severity (pcase (flymake-diagnostic-type diagnostic)
                                      ((or :error 'eglot-error) 1)
                                      ((or :warning 'eglot-warning) 2)
                                      (_ 3))))
                  (and (bound-and-true-p flymake-mode) (flymake-diagnostics beg end)))))))

;;;###autoload
(defun elelem-select-provider (name)
  "Use provider NAME in this project's folder; completes from `elelem.providers'."
  (interactive
   (let ((providers (elelem--execute 'elelem.providers (list :uri (elelem--uri)))))
     (list (completing-read (format "elelem provider (now %s): " (plist-get providers :provider))
                            (append (plist-get providers :available) nil) nil t))))
  (elelem--execute 'elelem.selectProvider (list :name name :uri (elelem--uri)))
  (message "elelem: provider %s" name))

;;;###autoload
(defun elelem-cancel ()
  "Stop the running turn; the conversation keeps what was complete."
  (interactive)
  (elelem--execute 'elelem.cancel (list :uri (elelem--uri))))

;;;###autoload
(defun elelem-new-conversation ()
  "Start a new conversation in this project's folder; the old one stays stored."
  (interactive)
  (elelem--execute 'elelem.reset (list :uri (elelem--uri)))
  (elelem--clear-transcript)
  (elelem--write "-- new conversation --" 'elelem-footer-face))

;;;###autoload
(defalias 'elelem-reset #'elelem-new-conversation)

(defun elelem--describe-conversation (conversation)
  "`title · 2026-12-01 21:45 · 3 turns · provider/model' for CONVERSATION."
  (let ((title (plist-get conversation :title))
        (updated (plist-get conversation :updated))
        (turns (plist-get conversation :turns))
        (provider (plist-get conversation :provider))
        (model (plist-get conversation :model)))
    (string-join
     (list (if (and (stringp title) (not (string-empty-p title))) (elelem--one-line title) "(untitled)")
           (elelem--short-time updated)
           (elelem--counted (if (numberp turns) turns 0) "turn")
           (concat (if (stringp provider) provider "?")
                   (if (and (stringp model) (not (string-empty-p model))) (concat "/" model) "")))
     " · ")))

(defun elelem--short-time (iso)
  "`2026-12-01 21:45' of the ISO time ISO; `?' when it is not one."
  (if (and (stringp iso) (string-match "\\`\\([0-9-]+\\)T\\([0-9]+:[0-9]+\\)" iso))
      (concat (match-string 1 iso) " " (match-string 2 iso))
    "?"))

(defun elelem--pick (prompt candidates)
  "The value of the candidate (LABEL . VALUE) of CANDIDATES read with PROMPT, kept in their order."
  (cdr (assoc (completing-read prompt
                               (lambda (string predicate action)
                                 (if (eq action 'metadata)
                                     '(metadata (display-sort-function . identity))
                                   (complete-with-action action candidates string predicate)))
                               nil t)
              candidates)))

(defun elelem--read-conversation (prompt)
  "The id of a stored conversation of this folder, read with PROMPT.
Candidates are newest first, as the server lists them."
  (let* ((listed (append (elelem--execute 'elelem.conversations (list :uri (elelem--uri))) nil))
         (candidates (let ((seen (make-hash-table :test #'equal)))
                       (mapcar (lambda (conversation)
                                 (let ((label (elelem--describe-conversation conversation)))
                                   ;; two alike (same title, same minute) stay apart by id
                                   (when (gethash label seen)
                                     (setq label (format "%s [%s]" label (plist-get conversation :id))))
                                   (puthash label t seen)
                                   (cons label (plist-get conversation :id))))
                               listed))))
    (unless candidates (user-error "elelem: no stored conversations in this folder"))
    (elelem--pick prompt candidates)))

;;;###autoload
(defun elelem-conversations (id)
  "Resume the stored conversation ID of this folder; redraw the transcript from it.
Interactively, pick it from the folder's conversations, newest first.  The next
`elelem-ask' continues it."
  (interactive (list (elelem--read-conversation "Resume elelem conversation: ")))
  (elelem-show-conversation (elelem--execute 'elelem.resume (list :id id :uri (elelem--uri))))
  (display-buffer (elelem--transcript) '(display-buffer-at-bottom (window-height . 0.3))))

;;;###autoload
(defun elelem-delete-conversation (id)
  "Delete the stored conversation ID of this folder (picked from the list)."
  (interactive (list (elelem--read-conversation "Delete elelem conversation: ")))
  (when (plist-get (elelem--execute 'elelem.deleteConversation (list :id id :uri (elelem--uri))) :started)
    ;; it was the current conversation: a new one began, as after `elelem-new-conversation'
    (elelem--clear-transcript)
    (elelem--write "-- new conversation --" 'elelem-footer-face))
  (message "elelem: deleted %s" id))

(defun elelem--describe-checkpoint (checkpoint)
  "`turn 3 · 2026-12-01 21:45 · prompt · 2 files' for CHECKPOINT (of `elelem.checkpoints')."
  (let ((prompt (plist-get checkpoint :prompt)))
    (string-join (list (format "turn %s" (plist-get checkpoint :turn))
                       (elelem--short-time (plist-get checkpoint :at))
                       (elelem--one-line (if (stringp prompt) prompt ""))
                       (elelem--counted (length (plist-get checkpoint :files)) "file"))
                 " · ")))

;;;###autoload
(defun elelem-rewind (turn)
  "Put this folder's files back to how they were before elelem TURN (and the turns after it).
Interactively, pick it from the turns that changed files, newest first.  Open
buffers change with the files (save them to write them), and the conversation
goes back too when TURN is the current conversation's.  Files changed since are
listed, and overwritten only when you answer yes."
  (interactive
   (let ((listed (append (elelem--execute 'elelem.checkpoints (list :uri (elelem--uri))) nil)))
     (unless listed (user-error "elelem: no turn has changed files in this folder yet"))
     (list (elelem--pick "Rewind to before elelem turn: "
                         (mapcar (lambda (c) (cons (elelem--describe-checkpoint c) (plist-get c :turn))) listed)))))
  (let* ((uri (elelem--uri))
         (checkpoint (cl-find turn (elelem--execute 'elelem.checkpoints (list :uri uri))
                              :key (lambda (c) (plist-get c :turn)) :test #'equal))
         (current (plist-get (elelem--execute 'elelem.transcript (list :uri uri)) :id))
         (ours (if (and checkpoint (equal (plist-get checkpoint :conversation) current)) t :json-false))
         (argument (list :uri uri :turn turn :conversation ours))
         (answer (elelem--execute 'elelem.rewind argument)))
    (unless (eq (plist-get answer :rewound) t)
      (unless (yes-or-no-p
               (format "elelem: changed since turn %d:\n%s\nOverwrite them? " turn
                       (mapconcat (lambda (c) (format "%s: %s" (plist-get c :path) (plist-get c :reason)))
                                  (plist-get answer :conflicts) "\n")))
        (user-error "elelem: nothing rewound"))
      (setq answer (elelem--execute 'elelem.rewind (append argument (list :force t)))))
    (if-let ((said (elelem--words (plist-get answer :text))))  ; the server's words on what it did
        (message "elelem: %s" said)
      (message "elelem: rewound to before turn %d: %s%s" turn
               (elelem--counted (length (plist-get answer :files)) "file")
               (if (eq (plist-get answer :conversation) t) " and the conversation" "")))))

;;;###autoload
(defun elelem-usage ()
  "Show the folder's conversation's tokens in and out, context used and cost.
Then inline completion's and next edit's figures, when they did anything."
  (interactive)
  (message "elelem: %s" (elelem-describe-context (elelem--execute 'elelem.context (list :uri (elelem--uri))))))

(defun elelem-describe-context (context)
  "What `elelem-usage' says of CONTEXT, a plist of `elelem.context'.
The conversation's figures, then inline completion's and next edit's in the
server's words (their `text') when they showed or asked for anything."
  (let ((usage (plist-get context :usage)))
    (if (not (consp usage))
        "this server does not count usage (no usage in elelem.context)"
      (string-join
       (cons (concat "conversation: " (elelem-conversation-usage usage))
             (delq nil (mapcar (lambda (suggestion)
                                 (let* ((figures (plist-get context (car suggestion)))
                                        (used (and (consp figures)
                                                   (or (and (numberp (plist-get figures :shown)) (> (plist-get figures :shown) 0))
                                                       (and (numberp (plist-get figures :requests)) (> (plist-get figures :requests) 0)))))
                                        (text (and used (elelem--words (plist-get figures :text)))))
                                   (and text (concat (cdr suggestion) ": " text))))
                               '((:completion . "inline completion") (:nextEdit . "next edit")))))
       "\n"))))

(defun elelem-transcript ()
  "Show the transcript; while it is empty, with the folder's current conversation."
  (interactive)
  (when (= (buffer-size (elelem--transcript)) 0)
    (condition-case nil  ; a server without stored conversations: an empty transcript
        (elelem-show-conversation (elelem--execute 'elelem.transcript (list :uri (elelem--uri))))
      (user-error nil)))
  (pop-to-buffer (elelem--transcript)))

;;;###autoload
(defun elelem-setup ()
  "Let eglot start elelem-lsp for buffers of `elelem-modes' no other server claims."
  (setq eglot-server-programs
        (append (cl-remove-if (lambda (entry) (eq (car-safe (cdr entry)) 'elelem-server))
                              eglot-server-programs)
                (list (cons elelem-modes (cons 'elelem-server elelem-server-command))))))

(provide 'elelem)
;;; elelem.el ends here
