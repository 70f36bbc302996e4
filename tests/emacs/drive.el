;;; drive.el --- a batch Emacs session using clients/emacs/elelem.el  -*- lexical-binding: t; -*-

;; Set before loading: `drive-root' (the workspace), `drive-out' (where to write what was seen, as
;; JSON), `drive-server' (the server command), `drive-client' (clients/emacs), `drive-scenario'.
;; Opens a.txt and plays the scenario, recording what the buffer and transcript show after each
;; step: "edits" asks, switches provider, creates a file, undoes, fixes a flymake diagnostic;
;; "conversations" asks in three conversations, lists, resumes, continues, reopens the transcript,
;; is refused mid-turn, deletes one; "checked" has the agent break a.txt, which a Flymake
;; backend then reports, and redraws the transcript; "rewind" asks, types in the buffer, refuses to
;; overwrite that, then rewinds the turn; "planned" asks a turn that plans twice, asks for the usage,
;; reopens the transcript; "stored" opens the transcript of a conversation the test stored.

(require 'json)
(add-to-list 'load-path drive-client)
(require 'elelem)

(setq elelem-server-command drive-server
      elelem-settings '(:provider "scripted" :workspacePlugins t)
      eglot-sync-connect t
      make-backup-files nil
      create-lockfiles nil)
(elelem-setup)

(defvar drive-done 0 "Turns finished.")
(add-hook 'elelem-turn-done-hook (lambda (_result) (setq drive-done (1+ drive-done))))

(defun drive-wait-turns (count)
  (let ((deadline (+ (float-time) 60)))
    (while (and (< drive-done count) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (unless (>= drive-done count) (error "timed out waiting for turn %d" count))))

(defun drive-report (err)
  "On a failure: the transcript and the end of the LSP traffic, on stderr, then ERR again."
  (message "the transcript:\n%s" (with-current-buffer (elelem--transcript) (buffer-string)))
  (message "the last LSP messages:\n%s"
           (with-current-buffer (jsonrpc-events-buffer (elelem--server))
             (buffer-substring-no-properties (max (point-min) (- (point-max) 6000)) (point-max))))
  (dolist (buffer (buffer-list))
    (when (string-match-p "stderr" (buffer-name buffer))
      (message "%s:\n%s" (buffer-name buffer) (with-current-buffer buffer (buffer-string)))))
  (signal (car err) (cdr err)))

(defun drive-snapshot (buffer)
  "What the person sees: the file buffer and the transcript (with the thinking's text)."
  (list :text (with-current-buffer buffer (buffer-string))
        :modified (if (buffer-modified-p buffer) t :json-false)
        :transcript (with-current-buffer "*elelem*" (buffer-substring-no-properties (point-min) (point-max)))
        :thinking (with-current-buffer "*elelem*"
                    (let (found)
                      (save-excursion
                        (goto-char (point-min))
                        (while (not (eobp))
                          (let ((next (next-single-property-change (point) 'face nil (point-max))))
                            (when (eq (get-text-property (point) 'face) 'elelem-thinking-face)
                              (push (buffer-substring-no-properties (point) next) found))
                            (goto-char next))))
                      (vconcat (nreverse found))))))

;; Lints every buffer with one error on its first character, like a checker would.
(defun drive-lint (report-fn &rest _)
  (funcall report-fn (list (flymake-make-diagnostic (current-buffer) 1 2 :error "x should be y"))))

(defun drive-edits (buffer)
  (let (seen)
    (elelem-ask "change x to y")
    (drive-wait-turns 1)
    (push (cons "asked" (drive-snapshot buffer)) seen)
    (push (list "managed" :managed (if (eglot-managed-p) t :json-false)) seen)

    (elelem-select-provider "second")
    (elelem-ask "who is there")
    (drive-wait-turns 2)
    (push (cons "switched" (drive-snapshot buffer)) seen)

    (elelem-select-provider "scripted")
    (elelem-ask "create b")
    (drive-wait-turns 3)
    (let ((created (find-buffer-visiting (expand-file-name "b.txt" drive-root))))
      (push (list "created" :exists (if (file-exists-p (expand-file-name "b.txt" drive-root)) t :json-false)
                  :text (and created (with-current-buffer created (buffer-string))))
            seen))

    (undo-boundary)
    (let ((last-command nil)) (undo))  ; the edit is an ordinary change: undo brings x back
    (push (list "undone" :text (buffer-string)) seen)
    (add-hook 'flymake-diagnostic-functions #'drive-lint nil t)
    (flymake-mode 1)
    (flymake-start)
    (let ((deadline (+ (float-time) 10)))
      (while (and (null (flymake-diagnostics)) (< (float-time) deadline))
        (accept-process-output nil 0.05)))
    (goto-char (point-min))
    (elelem-fix (line-beginning-position) (line-end-position))
    (drive-wait-turns 4)
    (push (cons "fixed" (drive-snapshot buffer)) seen)
    seen))

;; Reports an error for each line holding "BAD", as a checker of the buffer would.
(defun drive-bad-lint (report-fn &rest _)
  (let (found)
    (save-excursion
      (goto-char (point-min))
      (while (search-forward "BAD" nil t)
        (push (flymake-make-diagnostic (current-buffer) (line-beginning-position) (line-end-position)
                                       :error "bad line")
              found)))
    (funcall report-fn found)))

(defun drive-checked (buffer)
  "The agent breaks a.txt; Flymake's new error is what the model reads after the change."
  (setq elelem-settings '(:provider "scripted" :workspacePlugins t :checkWaitMs 8000))
  (elelem--server)  ; eglot sets the buffer's Flymake backends as it starts managing it: the lint comes after
  (add-hook 'flymake-diagnostic-functions #'drive-bad-lint nil t)
  (flymake-mode 1)
  (flymake-start)
  (elelem-ask "break a.txt")
  (drive-wait-turns 1)
  (let ((checked (drive-snapshot buffer)))
    (kill-buffer "*elelem*")
    (elelem-transcript)  ; drawn again from the stored conversation
    (list (cons "redrawn" (drive-snapshot buffer)) (cons "checked" checked))))

(defun drive-planned (buffer)
  "A turn that plans twice and counts its fetches; `elelem-usage'; the transcript reopened."
  (let (seen)
    (elelem-ask "do two things")
    (drive-wait-turns 1)
    (push (cons "asked" (drive-snapshot buffer)) seen)
    (push (list "usage" :message (elelem-usage)) seen)
    (kill-buffer "*elelem*")
    (elelem-transcript)
    (push (cons "reopened" (drive-snapshot buffer)) seen)
    seen))

(defun drive-stored (buffer)
  "The folder's conversation, which the test stored before Emacs started, in the transcript."
  (elelem-transcript)
  (list (cons "drawn" (drive-snapshot buffer))))

(defun drive-pick (command wanted)
  "Call COMMAND interactively, picking the candidate containing WANTED.
Returns the candidates offered, in the order the completion UI shows them."
  (let (offered)
    (cl-letf (((symbol-function 'completing-read)
               (lambda (_prompt collection &rest _)
                 (let* ((all (all-completions "" collection))
                        (sort (completion-metadata-get (completion-metadata "" collection nil)
                                                       'display-sort-function)))
                   (setq offered (if sort (funcall sort all) all))
                   (or (seq-find (lambda (label) (string-search wanted label)) offered) "")))))
      (call-interactively command))
    offered))

(defun drive-conversations (buffer)
  (let (seen)
    (elelem-ask "note one")
    (drive-wait-turns 1)
    (elelem-new-conversation)
    (elelem-ask "note two")
    (drive-wait-turns 2)
    (elelem-new-conversation)
    (elelem-ask "note three")
    (drive-wait-turns 3)
    (push (cons "three" (drive-snapshot buffer)) seen)
    (push (list "offered" :labels (vconcat (drive-pick #'elelem-conversations "note one"))) seen)
    (push (cons "resumed" (drive-snapshot buffer)) seen)
    (elelem-ask "recall")
    (drive-wait-turns 4)
    (push (cons "continued" (drive-snapshot buffer)) seen)
    (kill-buffer "*elelem*")
    (elelem-transcript)
    (push (cons "reopened" (drive-snapshot buffer)) seen)
    (elelem-ask "wait for it")
    (let ((deadline (+ (float-time) 30)))
      (while (and (not (string-search "waiting" (with-current-buffer "*elelem*" (buffer-string))))
                  (< (float-time) deadline))
        (accept-process-output nil 0.05)))
    (let ((before (drive-snapshot buffer)))
      (push (list "refused"
                  :message (condition-case err (progn (drive-pick #'elelem-conversations "note two") "no refusal")
                             (user-error (error-message-string err)))
                  :unchanged (if (equal before (drive-snapshot buffer)) t :json-false))
            seen))
    (drive-pick #'elelem-delete-conversation "note two")  ; not the current one: allowed mid-turn
    (push (list "deleted" :titles (vconcat (mapcar (lambda (c) (plist-get c :title))
                                                   (elelem--execute 'elelem.conversations nil))))
          seen)
    seen))  ; the turn still waits: shutting the server down ends it

(defun drive-rewind (buffer)
  (let (seen conflict)
    (elelem-ask "change x to y")
    (drive-wait-turns 1)
    (push (cons "asked" (drive-snapshot buffer)) seen)
    (goto-char (point-max))
    (undo-boundary)  ; as the command loop puts one between the person's commands
    (insert "typed since\n")
    (undo-boundary)
    (cl-letf (((symbol-function 'yes-or-no-p) (lambda (prompt) (setq conflict prompt) nil)))
      (push (list "refused" :message (condition-case err (progn (drive-pick #'elelem-rewind "turn 1") "no refusal")
                                        (user-error (error-message-string err))))
            seen))
    (push (cons "kept" (drive-snapshot buffer)) seen)
    (let (said)
      (cl-letf (((symbol-function 'yes-or-no-p) (lambda (prompt) (setq conflict prompt) t))
                ((symbol-function 'message)
                 (lambda (format-string &rest args) (and format-string (push (apply #'format format-string args) said)))))
        (push (list "offered" :labels (vconcat (drive-pick #'elelem-rewind "turn 1"))) seen))
      (push (list "said" :messages (vconcat (nreverse said))) seen))
    (push (list "conflict" :prompt conflict) seen)
    (push (cons "rewound" (drive-snapshot buffer)) seen)
    (undo-boundary)
    (let ((last-command nil)) (undo))  ; the rewind is an ordinary change: undo takes it back
    (push (cons "undone" (drive-snapshot buffer)) seen)
    seen))

(let* ((buffer (find-file-noselect (expand-file-name "a.txt" drive-root)))
       (seen (with-current-buffer buffer
               (condition-case err (funcall (intern (concat "drive-" drive-scenario)) buffer)
                 (error (drive-report err))))))
  (with-temp-file drive-out
    (insert (json-encode (nreverse seen))))
  (ignore-errors (eglot-shutdown (elelem--server))))

;;; drive.el ends here
