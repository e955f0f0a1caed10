// Is this log a vLLM log? Decides when a `*.log` that VS Code opened in its own Log language (the
// file-name association wins over the first-line pattern) becomes a vLLM Log. Pure (no `vscode` import).
//
// Stricter than the server's `sniff.py` (which serves any log that merely mentions vLLM): the language of a
// file changes only on what vLLM itself prints, so a pip or application log that names vllm stays a Log.

/** How much of a document is looked at: its first lines, and not more characters than this. */
export const SNIFF_LINES = 200;
export const SNIFF_CHARS = 64_000;

/** Language ids whose documents may be switched (VS Code's Log language, and plain text). */
export const SWITCHABLE_LANGUAGES = new Set(['log', 'plaintext']);

/** File names whose plain-text documents may be switched (a `.txt` is anything; leave it). */
const SWITCHABLE_NAMES = /\.(?:log|out|err)(?:\.\d+)?$/i;

const VLLM_EVIDENCE: readonly RegExp[] = [
    // vLLM's logger header, every version: `INFO 05-21 10:00:01 [api_server.py:123]`, older `file.py:123]`,
    // 0.31+ `INFO 05-21 10:00:01.123 [v1/engine/core.py:123]`.
    /\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w./-]+\.py:\d+\]/,
    // vLLM's process prefixes: (EngineCore_DP0 pid=1), (APIServer pid=1), (VllmWorker rank=0 pid=2),
    // (Worker_TP1 pid=3), (VllmWorkerProcess pid=4).
    /\((?:EngineCore(?:_DP\d+)?|APIServer|VllmWorker(?:Process)?(?: rank=\d+)?|Worker(?:_[A-Z]+\d+)+) pid=\d+\)/,
    // Its banner and its death.
    /\bvLLM (?:API )?server version \d/,
    /\bEngineDeadError\b/,
];

/** The part of `text` that sniffing looks at. */
export function sniffHead(text: string): string {
    const part = text.slice(0, SNIFF_CHARS);
    let pos = -1;
    for (let i = 0; i < SNIFF_LINES; i++) {
        pos = part.indexOf('\n', pos + 1);
        if (pos < 0) {
            return part;
        }
    }
    return part.slice(0, pos);
}

/** True when the first lines carry something only vLLM prints. */
export function looksLikeVllmLog(text: string): boolean {
    const head = sniffHead(text);
    return VLLM_EVIDENCE.some((re) => re.test(head));
}

/** Whether a document of `languageId` at `path` is one whose language we may set to vLLM Log. */
export function mayBecomeVllmLog(languageId: string, path: string): boolean {
    if (!SWITCHABLE_LANGUAGES.has(languageId)) {
        return false;
    }
    return languageId === 'log' || SWITCHABLE_NAMES.test(path);
}
