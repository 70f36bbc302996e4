;;; drive.el --- a batch Emacs session using clients/emacs/elelem.el  -*- lexical-binding: t; -*-

;; Set before loading: `drive-root' (the workspace), `drive-out' (where to write what was seen, as
;; JSON), `drive-server' (the server command), `drive-client' (clients/emacs).
;; Opens a.txt, asks, switches provider, asks again; records the buffer and transcript after each.

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

(let* ((file (expand-file-name "a.txt" drive-root))
       (buffer (find-file-noselect file))
       (snapshots nil))
  (with-current-buffer buffer
    (elelem-ask "change x to y")
    (drive-wait-turns 1)
    (push (drive-snapshot buffer) snapshots)
    (push (list :managed (if (eglot-managed-p) t :json-false)) snapshots)
    (elelem-select-provider "second")
    (elelem-ask "who is there")
    (drive-wait-turns 2)
    (push (drive-snapshot buffer) snapshots))
  (with-temp-file drive-out
    (insert (json-encode (vconcat (nreverse snapshots)))))
  (ignore-errors (eglot-shutdown (elelem--server))))

;;; drive.el ends here
