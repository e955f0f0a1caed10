;;; e2e.el --- end-to-end run of vllm-log-lsp in Emacs + eglot (batch)  -*- lexical-binding: t; -*-

;; Driven by tests/editors/test_emacs.py:
;;   emacs --batch -q -l editors/emacs/vllm-log.el -l tests/editors/emacs/e2e.el
;; in the workspace folder.  Opens $E2E_LOG like a user (find-file: the mode comes from the documented
;; set-up, eglot starts from its mode hook), waits for flymake's diagnostics, asks for a hover on the
;; root-cause line and a definition from a symptom line, and writes what it saw as JSON to $E2E_OUT;
;; the Python test makes the assertions.  Exit 0 when the script ran to the end, 1 on a Lisp error.
;; E2E_ROOT_LINE and E2E_SYMPTOM_LINE are 0-based; E2E_SCRIPT is the launch script, E2E_FIX_TITLE a
;; text the preferred quick fix's title contains, E2E_CODE_ACTIONS `require', `auto' (when the server
;; offers code actions), `list' (record the actions offered, apply none) or `skip'.

;;; Code:

(require 'json)
(require 'subr-x)
(require 'cl-lib)
(require 'seq)

(defvar e2e-result nil "Alist written as JSON at the end.")
(defvar e2e-start (float-time))

(defun e2e-put (key value) (push (cons key value) e2e-result))
(defun e2e-ms () (round (* 1000 (- (float-time) e2e-start))))
(defun e2e-env-int (name) (string-to-number (or (getenv name) (error "%s not set" name))))

(defun e2e-wait (pred seconds)
  "Let processes run until PRED is non-nil or SECONDS pass; return PRED's value."
  (let ((deadline (+ (float-time) seconds)) value)
    (while (and (not (setq value (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    value))

(defun e2e-line-col (pos)
  "0-based line and column (in characters) of POS."
  (save-excursion
    (goto-char pos)
    (list (1- (line-number-at-pos)) (- pos (line-beginning-position)))))

(defun e2e-position-params (line col)
  "TextDocumentPositionParams at LINE/COL as eglot builds them (it converts columns for the server)."
  (save-excursion
    (goto-char (point-min))
    (forward-line line)
    (forward-char col)
    (eglot--TextDocumentPositionParams)))

(defun e2e-edited-files (edit)
  "The files a WorkspaceEdit plist EDIT changes (`changes' or `documentChanges')."
  (let ((files nil) (changes (plist-get edit :changes)))
    (while changes
      (push (eglot--uri-to-path (substring (symbol-name (car changes)) 1)) files)
      (setq changes (cddr changes)))
    (seq-doseq (change (or (plist-get edit :documentChanges) []))
      (when-let ((doc (plist-get change :textDocument)))
        (push (eglot--uri-to-path (plist-get doc :uri)) files)))
    (nreverse files)))

(defun e2e-main ()
  (let ((root-line (e2e-env-int "E2E_ROOT_LINE"))
        (symptom-line (e2e-env-int "E2E_SYMPTOM_LINE")))
    (package-initialize)                ; where Emacs 28 finds eglot (ELPA or Debian's elpa-eglot)
    (find-file (or (getenv "E2E_LOG") (error "E2E_LOG not set")))
    (e2e-put 'major_mode (symbol-name major-mode))
    ;; eglot-ensure (from the mode hook) connects after the next command; batch runs no command loop.
    (run-hooks 'post-command-hook)
    (let ((server (e2e-wait (lambda () (and (fboundp 'eglot-current-server) (eglot-current-server))) 20)))
      (unless server (error "eglot did not connect"))
      (e2e-put 'eglot_version (when (boundp 'eglot--version) eglot--version))
      (e2e-put 'language_id (eglot--language-id server))
      (e2e-put 'project_root (when-let ((project (eglot--project server))) (project-root project)))
      (e2e-put 'connected_ms (e2e-ms))
      ;; Diagnostics: flymake, as the user sees them.
      (let ((diags (e2e-wait (lambda ()
                               (flymake-start)
                               (flymake-diagnostics))
                             20)))
        (e2e-put 'diagnostics
                 (vconcat
                  (mapcar (lambda (d)
                            (let ((beg (e2e-line-col (flymake-diagnostic-beg d)))
                                  (end (e2e-line-col (flymake-diagnostic-end d))))
                              `((line . ,(car beg)) (col . ,(cadr beg))
                                (end_line . ,(car end)) (end_col . ,(cadr end))
                                (type . ,(symbol-name (flymake-diagnostic-type d)))
                                (text . ,(flymake-diagnostic-text d)))))
                          diags))))
      (e2e-put 'diagnostics_ms (e2e-ms))
      (e2e-put 'root_line_text
               (save-excursion
                 (goto-char (point-min))
                 (forward-line root-line)
                 (buffer-substring-no-properties (line-beginning-position) (line-end-position))))
      ;; Hover on the root-cause line, past its non-ASCII prefix.
      (let* ((col (save-excursion
                    (goto-char (point-min))
                    (forward-line root-line)
                    (if (search-forward "OutOfMemoryError" (line-end-position) t)
                        (- (match-beginning 0) (line-beginning-position))
                      0)))
             (hover (jsonrpc-request server :textDocument/hover (e2e-position-params root-line col)))
             (contents (plist-get hover :contents)))
        (e2e-put 'hover_kind (plist-get contents :kind))
        (e2e-put 'hover (plist-get contents :value)))
      ;; Go to definition from the symptom line: xref, as M-. does.
      (goto-char (point-min))
      (forward-line symptom-line)
      (let ((defs (xref-backend-definitions 'eglot (xref-backend-identifier-at-point 'eglot))))
        (e2e-put 'definitions
                 (vconcat
                  (mapcar (lambda (xref)
                            (let ((loc (xref-item-location xref)))
                              `((file . ,(xref-file-location-file loc))
                                (line . ,(1- (xref-file-location-line loc)))
                                (col . ,(xref-file-location-column loc)))))
                          defs))))
      ;; The quick fix: M-x eglot-code-actions on the root-cause line, pick the wanted action, answer
      ;; eglot's "Server wants to edit ... Proceed?" with y, save the edited script.
      (let ((mode (or (getenv "E2E_CODE_ACTIONS") "auto"))
            (capable (and (eglot--server-capable :codeActionProvider) t)))
        (e2e-put 'code_action_capable (if capable t :json-false))
        (when (or (member mode '("require" "list")) (and capable (equal mode "auto")))
          (goto-char (point-min))
          (forward-line root-line)
          ;; What the server offers there (eglot-code-actions returns them when not interactive).
          (e2e-put 'code_actions
                   (vconcat
                    (mapcar (lambda (action)
                              (let ((command (plist-get action :command)))
                                `((title . ,(plist-get action :title))
                                  (preferred . ,(if (eq (plist-get action :isPreferred) t) t :json-false))
                                  (files . ,(vconcat (e2e-edited-files (plist-get action :edit))))
                                  (command . ,(if (stringp command) command
                                                (plist-get command :command))))))
                            (eglot-code-actions (line-beginning-position) (line-end-position)))))
          (unless (equal mode "list")
          (let ((wanted (or (getenv "E2E_FIX_TITLE") ""))
                (titles nil) (prompts nil) (default nil))
            ;; The user presses RET at eglot's prompt: the default, which is the preferred action.
            (cl-letf* ((completing-read-function
                        (lambda (_prompt collection &optional _predicate _require _initial _history def
                                         &rest _)
                          (setq titles (mapcar (lambda (c) (if (consp c) (car c) c)) collection))
                          (setq default (if (consp def) (car def) def))
                          (if (and default (string-search wanted default))
                              default
                            (error "the default code action %S is not titled like %S (of %S)"
                                   default wanted titles))))
                       ((symbol-function 'y-or-n-p)
                        (lambda (prompt) (push prompt prompts) t))
                       (last-nonmenu-event ?\r))   ; invoked from the keyboard, not a menu
              (eglot-code-actions (line-beginning-position) (line-end-position) nil t))
            (e2e-put 'code_action_default default)
            (e2e-put 'code_action_titles (vconcat titles))
            (e2e-put 'code_action_prompts (vconcat prompts))
            (e2e-put 'script_modified
                     (let ((buf (find-buffer-visiting (getenv "E2E_SCRIPT"))))
                       (if (and buf (buffer-modified-p buf)) t :json-false)))
            (save-some-buffers t)))))
      (e2e-put 'done_ms (e2e-ms)))))

(let ((ok (condition-case err
              (progn (e2e-main) t)
            (error (e2e-put 'error (error-message-string err))
                   ;; What eglot saw of the server (its events and stderr), to explain the failure.
                   (dolist (buf (buffer-list))
                     (when (string-prefix-p "*EGLOT" (buffer-name buf))
                       (with-current-buffer buf
                         (e2e-put (intern (buffer-name buf))
                                  (buffer-substring-no-properties
                                   (max (point-min) (- (point-max) 3000)) (point-max))))))
                   nil))))
  (with-temp-file (or (getenv "E2E_OUT") (error "E2E_OUT not set"))
    (let ((json-encoding-pretty-print nil))
      (insert (json-encode e2e-result))))
  (kill-emacs (if ok 0 1)))

;;; e2e.el ends here
