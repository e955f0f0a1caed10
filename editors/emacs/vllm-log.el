;;; vllm-log.el --- vLLM crash logs with vllm-log-lsp in eglot  -*- lexical-binding: t; -*-

;; Load it from your init file: (load "/path/to/vllm-log.el")
;; Needs `vllm-log-lsp' on PATH (`pip install .' in a checkout of vllm-log-lsp) and eglot (built in
;; since Emacs 29; M-x package-install RET eglot, or Debian's elpa-eglot, on Emacs 28).

;;; Code:

(defvar vllm-log-sniff-regexp
  (concat "(EngineCore\\|(APIServer\\|\\[core\\.py:\\|EngineDeadError\\|vllm\\|vLLM"
          ;; vLLM's own header: `INFO 05-21 10:00:01 [api_server.py:123]'
          "\\|\\(?:DEBUG\\|INFO\\|WARNING\\|ERROR\\|CRITICAL\\) [0-9][0-9]-[0-9][0-9] "
          "[0-9][0-9]:[0-9][0-9]:[0-9][0-9][.0-9]* \\[?[[:alnum:]_.]+\\.py:[0-9]+\\]")
  "What marks a *.log file as a vLLM log when it appears in its first lines.")

(defun vllm-log-sniff ()
  "Non-nil when this buffer visits a *.log file that looks like a vLLM log.
That is, when one of its first 200 lines matches `vllm-log-sniff-regexp'."
  (and buffer-file-name
       (string-match-p "\\.log\\'" buffer-file-name)
       (save-excursion
         (goto-char (point-min))
         (let ((limit (min (save-excursion (forward-line 200) (point))
                           (+ (point-min) 256000)))
               (case-fold-search nil))
           (re-search-forward vllm-log-sniff-regexp limit t)))))

(defvar vllm-log-font-lock-keywords
  '(("\\_<\\(?:ERROR\\|CRITICAL\\)\\_>" . font-lock-warning-face)
    ("\\_<WARNING\\_>" . font-lock-keyword-face)
    ("^.*Traceback (most recent call last):" . font-lock-comment-face)
    ("\\_<[[:alnum:]_.]*\\(?:Error\\|Exception\\):" . font-lock-type-face)))

;;;###autoload
(define-derived-mode vllm-log-mode text-mode "vLLM-Log"
  "Major mode for vLLM server logs, diagnosed by vllm-log-lsp through eglot."
  (setq-local font-lock-defaults '(vllm-log-font-lock-keywords t))
  (setq-local truncate-lines t))

;;;###autoload
(add-to-list 'auto-mode-alist '("vllm[^/]*\\.log\\'" . vllm-log-mode))
;;;###autoload
(add-to-list 'magic-mode-alist '(vllm-log-sniff . vllm-log-mode))

(defvar eglot-server-programs)
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               ;; The language id eglot sends is the mode's name less "-mode": vllm-log.
               '(vllm-log-mode . ("vllm-log-lsp" "serve"))))

;; Start the server when a vLLM log opens (remove this to start it with M-x eglot).
(defun vllm-log-start-eglot ()
  "Connect eglot to vllm-log-lsp for this buffer, when eglot is installed."
  (when (fboundp 'eglot-ensure)
    (eglot-ensure)))
(add-hook 'vllm-log-mode-hook #'vllm-log-start-eglot)

(provide 'vllm-log)
;;; vllm-log.el ends here
