// How a vLLM log looks in VS Code beyond its grammar:
// - a `*.log` opened in VS Code's Log language (the file-name association wins over our first-line pattern)
//   becomes a vLLM Log when its first lines are vLLM's (`sniff.ts`), once per document, so a user who
//   switches it back keeps their choice;
// - a status bar item on vLLM logs says so, and how many root causes the server found (click: go there);
// - each root-cause line (the server's Error diagnostics) gets a whole-line highlight and an overview-ruler
//   mark, so the root cause is the loudest thing on screen, louder than the red ERROR levels around it.

import * as vscode from 'vscode';

import { looksLikeVllmLog, mayBecomeVllmLog, SNIFF_LINES } from './sniff';

export const VLLM_LANGUAGE = 'vllm-log';
const SOURCE = 'vllm-log'; // the server's diagnostic source

export function registerLook(context: vscode.ExtensionContext, log: (message: string) => void): void {
    const detected = new Set<string>(); // documents whose language we set from their content
    const decided = new Set<string>(); // documents looked at once: never switched again
    const status = vscode.window.createStatusBarItem('vllmLog.status', vscode.StatusBarAlignment.Right, 101);
    status.name = 'vLLM Log';
    status.command = 'vllmLog.goToRootCause';
    const highlight = vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        backgroundColor: new vscode.ThemeColor('vllmLog.rootCauseBackground'),
        overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.errorForeground'),
        overviewRulerLane: vscode.OverviewRulerLane.Full,
        fontWeight: 'bold',
    });
    context.subscriptions.push(status, highlight);

    const sniff = async (doc: vscode.TextDocument): Promise<void> => {
        const key = doc.uri.toString();
        if (decided.has(key) || !['file', 'untitled'].includes(doc.uri.scheme)) {
            return;
        }
        if (!mayBecomeVllmLog(doc.languageId, doc.uri.path)) {
            return;
        }
        decided.add(key);
        if (!vscode.workspace.getConfiguration('vllmLog').get<boolean>('detectLanguage', true)) {
            return;
        }
        const head = doc.getText(new vscode.Range(0, 0, Math.min(doc.lineCount, SNIFF_LINES), 0));
        if (!looksLikeVllmLog(head)) {
            return;
        }
        detected.add(key);
        log(`${doc.uri.fsPath || key}: vLLM log content in a '${doc.languageId}' document; setting vLLM Log`);
        try {
            await vscode.languages.setTextDocumentLanguage(doc, VLLM_LANGUAGE);
        } catch (e) {
            detected.delete(key);
            log(`Could not set the language of ${key}: ${String(e)}`);
        }
    };

    const refresh = (): void => {
        for (const editor of vscode.window.visibleTextEditors) {
            editor.setDecorations(highlight, rootCauses(editor.document));
        }
        const editor = vscode.window.activeTextEditor;
        if (!editor || editor.document.languageId !== VLLM_LANGUAGE) {
            status.hide();
            return;
        }
        const roots = rootCauses(editor.document).length;
        const how = detected.has(editor.document.uri.toString())
            ? 'recognised from its first lines (it opened as Log)'
            : 'recognised by its name or first line';
        status.text = roots ? `$(pulse) vLLM log: ${roots} root cause${roots > 1 ? 's' : ''}` : '$(pulse) vLLM log';
        status.tooltip = `vLLM Log: ${how}. ${roots ? 'Click to go to the root cause.' : 'No engine death found (yet).'}`;
        status.accessibilityInformation = { label: status.text.replace('$(pulse) ', '') };
        status.show();
    };

    for (const doc of vscode.workspace.textDocuments) {
        void sniff(doc);
    }
    context.subscriptions.push(
        vscode.workspace.onDidOpenTextDocument((doc) => void sniff(doc)),
        vscode.workspace.onDidCloseTextDocument((doc) => {
            // Setting the language closes and reopens the document: only forget it when it is really gone.
            setTimeout(() => {
                if (!vscode.workspace.textDocuments.some((d) => d.uri.toString() === doc.uri.toString())) {
                    decided.delete(doc.uri.toString());
                    detected.delete(doc.uri.toString());
                }
            }, 1000);
        }),
        vscode.languages.onDidChangeDiagnostics(() => refresh()),
        vscode.window.onDidChangeActiveTextEditor(() => refresh()),
        vscode.window.onDidChangeVisibleTextEditors(() => refresh()),
    );
    refresh();
}

/** The root-cause ranges the server reported for `doc` (its Error diagnostics), whole lines. */
function rootCauses(doc: vscode.TextDocument): vscode.Range[] {
    return vscode.languages
        .getDiagnostics(doc.uri)
        .filter((d) => d.severity === vscode.DiagnosticSeverity.Error && d.source === SOURCE)
        .map((d) => new vscode.Range(d.range.start.line, 0, d.range.start.line, 0));
}
