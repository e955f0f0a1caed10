// The message shown after `vLLM Log: Analyze Log File from Disk…`. Pure (no `vscode` import).

/** One line from the server's analyzeFile result ({findings: [{line, title, phase}], healthy, skipped}). */
export function summarise(target: string, result: unknown): string | undefined {
    if (typeof result === 'string' && result.trim() !== '') {
        return result;
    }
    if (!result || typeof result !== 'object') {
        return undefined;
    }
    const r = result as {
        findings?: { line?: number; title?: string; phase?: string }[];
        skipped?: string | null;
        healthy?: boolean;
        summary?: string;
    };
    if (typeof r.summary === 'string') {
        return r.summary;
    }
    if (r.skipped) {
        return `vLLM Log: ${target} was not analysed: ${r.skipped}`;
    }
    const findings = Array.isArray(r.findings) ? r.findings : [];
    if (findings.length === 0) {
        return `vLLM Log: no engine death found in ${target}.`;
    }
    const first = findings
        .slice(0, 3)
        .map((f) => `${f.title ?? 'root cause'} (line ${f.line ?? '?'}${f.phase ? `, ${f.phase}` : ''})`)
        .join('; ');
    const more = findings.length > 3 ? ` and ${findings.length - 3} more` : '';
    return `vLLM Log: ${target}: ${first}${more}. Details are in the Problems panel.`;
}
