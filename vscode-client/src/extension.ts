// vLLM Log: VS Code client for the bundled vllm-log-lsp language server.

import * as vscode from 'vscode';
import {
    DidChangeConfigurationNotification,
    ExecuteCommandRequest,
    LanguageClient,
    LanguageClientOptions,
    RevealOutputChannelOn,
    ServerOptions,
    State,
} from 'vscode-languageclient/node';

import {
    describeFailures,
    findInterpreter,
    interpreterCandidates,
    MIN_PYTHON,
    serverLaunch,
} from './python';
import { registerLook } from './look';
import { RESTART_KEYS, restrictServerSettings, serverSettings, trustedValue } from './settings';
import { summarise } from './summary';

const SECTION = 'vllmLog';
const CLIENT_ID = 'vllmLog'; // the client reads `vllmLog.trace.server` from this id
const CLIENT_NAME = 'vLLM Log Language Server';

/** Commands this extension implements itself. The server advertises some with the same ids
 *  (`vllmLog.analyzeFile`, `vllmLog.goToRootCause` for its code lenses): ours forward to the server
 *  through workspace/executeCommand, and the client never registers them a second time. */
const OWN_COMMANDS = new Set([
    'vllmLog.restartServer',
    'vllmLog.analyzeFile',
    'vllmLog.goToRootCause',
    'vllmLog.showOutput',
    'vllmLog.copyFixedCommand',
    'vllmLog.showReport',
]);

const LANGUAGES = ['vllm-log', 'log', 'plaintext'];
const SCHEMES = ['file', 'untitled'];

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel;
let extensionPath = '';
let lifecycle: Promise<void> = Promise.resolve();

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    extensionPath = context.extensionPath;
    output = vscode.window.createOutputChannel('vLLM Log', { log: true });
    context.subscriptions.push(output);

    context.subscriptions.push(
        vscode.commands.registerCommand('vllmLog.restartServer', () => restart('command')),
        vscode.commands.registerCommand('vllmLog.showOutput', () => output.show(true)),
        vscode.commands.registerCommand('vllmLog.analyzeFile', (uri?: vscode.Uri) => analyzeFile(uri)),
        vscode.commands.registerCommand('vllmLog.goToRootCause', (...args: unknown[]) => goToRootCause(args)),
        vscode.commands.registerCommand('vllmLog.copyFixedCommand', (...args: unknown[]) => copyFixedCommand(args)),
        vscode.commands.registerCommand('vllmLog.showReport', (uri?: vscode.Uri) => showReport(uri)),
        vscode.workspace.onDidChangeConfiguration((e) => onConfigurationChanged(e)),
        vscode.workspace.onDidGrantWorkspaceTrust(() => restart('workspace trusted')),
    );
    watchPythonExtension(context);
    registerLook(context, (message) => output.info(message));

    // Not awaited: activation stays quick even when Python is slow to answer; commands wait for it.
    void restart('activation');
}

export async function deactivate(): Promise<void> {
    await stopClient();
}

// ---------------------------------------------------------------------------------------------------------
// Server lifecycle

/** Serialises start/stop so that quick successive restarts never run two servers. */
function restart(reason: string): Promise<void> {
    lifecycle = lifecycle.then(async () => {
        output.info(`(Re)starting the language server: ${reason}`);
        await stopClient();
        await startClient();
    });
    return lifecycle;
}

async function stopClient(): Promise<void> {
    const c = client;
    client = undefined;
    if (!c) {
        return;
    }
    try {
        if (c.state !== State.Stopped) {
            await c.stop(3000);
        }
    } catch (e) {
        output.warn(`Stopping the language server: ${String(e)}`);
    }
    try {
        await c.dispose();
    } catch {
        // already disposed
    }
}

function configuration(scope?: vscode.Uri): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration(SECTION, scope ?? vscode.workspace.workspaceFolders?.[0]?.uri);
}

/** What the server gets of the `vllmLog` section at `scope`: in Restricted Mode, no workspace rule files. */
function settingsForServer(value: unknown, scope?: vscode.Uri): ReturnType<typeof serverSettings> {
    const cfg = configuration(scope);
    return restrictServerSettings(serverSettings(value), (key) => cfg.inspect(key), vscode.workspace.isTrusted);
}

/** A setting that chooses a program to run: in Restricted Mode only its user (global) value counts. */
function restrictedSetting(key: 'interpreter' | 'serverArgs'): string[] {
    const cfg = configuration();
    const value = trustedValue<string[]>(cfg.inspect<string[]>(key), cfg.get<string[]>(key), vscode.workspace.isTrusted);
    return Array.isArray(value) ? value.filter((s) => typeof s === 'string') : [];
}

async function startClient(): Promise<void> {
    const setting = restrictedSetting('interpreter');
    // The Python extension's interpreter may live inside the workspace (a .venv): only ask for it when the
    // workspace is trusted.
    const fromPythonExt = setting.length === 0 && vscode.workspace.isTrusted ? await pythonExtensionInterpreter() : undefined;
    const candidates = interpreterCandidates(setting, fromPythonExt);
    const { found, failures } = await findInterpreter(candidates);
    for (const f of failures) {
        output.warn(`Python '${f.command.join(' ')}' (${f.source}) ${f.reason}`);
    }
    if (!found) {
        void reportNoPython(describeFailures(failures));
        return;
    }
    output.info(`Python ${found.version.join('.')}: ${found.command.join(' ')} (${found.source})`);

    const launch = serverLaunch(found.command, extensionPath, restrictedSetting('serverArgs'));
    output.info(`Server command: ${launch.command} ${launch.args.join(' ')}`);
    const serverOptions: ServerOptions = {
        command: launch.command,
        args: launch.args,
        // Our own folder, never a workspace folder (vscode-languageclient's default when no cwd is given).
        options: { env: launch.env, cwd: launch.cwd },
    };

    const documentSelector = LANGUAGES.flatMap((language) => SCHEMES.map((scheme) => ({ language, scheme })));
    const clientOptions: LanguageClientOptions = {
        documentSelector,
        outputChannel: output,
        traceOutputChannel: output,
        revealOutputChannelOn: RevealOutputChannelOn.Never,
        initializationOptions: settingsForServer(configuration()),
        middleware: {
            workspace: {
                // Answer workspace/configuration for our section without the client-only keys.
                configuration: async (params, token, next) => {
                    const result = await next(params, token);
                    if (!Array.isArray(result)) {
                        return result;
                    }
                    return result.map((value, i) => {
                        const item = params.items[i];
                        if (item?.section !== SECTION) {
                            return value;
                        }
                        const scope = item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined;
                        return settingsForServer(value, scope);
                    });
                },
            },
        },
    };

    const c = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
    keepOwnCommands(c);
    client = c;
    try {
        await c.start();
        output.info('Language server started.');
    } catch (e) {
        output.error(`The language server failed to start: ${String(e)}`);
        // Not awaited: the lifecycle chain must not wait for the user to dismiss a message.
        void vscode.window
            .showErrorMessage(
                `vLLM Log: the language server failed to start with '${found.command.join(' ')}'. See the output for details.`,
                'Show Output',
                'Open Setting',
            )
            .then((choice) => {
                if (choice === 'Show Output') {
                    output.show(true);
                } else if (choice === 'Open Setting') {
                    void vscode.commands.executeCommand('workbench.action.openSettings', 'vllmLog.interpreter');
                }
            });
    }
}

/**
 * vscode-languageclient registers every command the server advertises as a VS Code command. Where the
 * server advertises one of ours (vllmLog.analyzeFile), that would clash with the command registered above:
 * drop those ids from the registration; ours forwards to the server with executeCommand.
 */
function keepOwnCommands(c: LanguageClient): void {
    const feature = c.getFeature(ExecuteCommandRequest.method) as unknown as {
        register?: (data: { registerOptions?: { commands?: string[] } }) => void;
    };
    const register = feature?.register?.bind(feature);
    if (!feature || !register) {
        return;
    }
    feature.register = (data) => {
        const commands = data?.registerOptions?.commands;
        if (Array.isArray(commands)) {
            data.registerOptions!.commands = commands.filter((cmd) => !OWN_COMMANDS.has(cmd));
        }
        register(data);
    };
}

async function reportNoPython(detail: string): Promise<void> {
    const message =
        `vLLM Log needs Python ${MIN_PYTHON.join('.')} or newer to run its language server. ${detail}. ` +
        `Install Python ${MIN_PYTHON.join('.')}+ or set "vllmLog.interpreter" to its path, then run "vLLM Log: Restart Language Server".`;
    output.error(message);
    const choice = await vscode.window.showErrorMessage(message, 'Open Setting', 'Show Output');
    if (choice === 'Open Setting') {
        await vscode.commands.executeCommand('workbench.action.openSettings', 'vllmLog.interpreter');
    } else if (choice === 'Show Output') {
        output.show(true);
    }
}

function onConfigurationChanged(e: vscode.ConfigurationChangeEvent): void {
    if (!e.affectsConfiguration(SECTION)) {
        return;
    }
    if (RESTART_KEYS.some((k) => e.affectsConfiguration(k))) {
        void restart('interpreter settings changed');
        return;
    }
    if (client?.state === State.Running) {
        void client.sendNotification(DidChangeConfigurationNotification.type, {
            settings: { [SECTION]: settingsForServer(configuration()) },
        });
    }
}

// ---------------------------------------------------------------------------------------------------------
// The Python extension (optional: used only when it is installed)

interface PythonEnvironmentsApi {
    getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
    resolveEnvironment(env: { id: string; path: string } | string): Promise<
        { executable: { uri?: vscode.Uri } } | undefined
    >;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
}

async function pythonEnvironments(): Promise<PythonEnvironmentsApi | undefined> {
    const ext = vscode.extensions.getExtension<{ environments?: PythonEnvironmentsApi }>('ms-python.python');
    if (!ext) {
        return undefined;
    }
    try {
        const api = ext.isActive ? ext.exports : await ext.activate();
        return api?.environments;
    } catch (e) {
        output.warn(`The Python extension did not activate: ${String(e)}`);
        return undefined;
    }
}

async function pythonExtensionInterpreter(): Promise<string | undefined> {
    const envs = await pythonEnvironments();
    if (!envs) {
        return undefined;
    }
    try {
        const active = envs.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
        const resolved = await envs.resolveEnvironment(active);
        return resolved?.executable?.uri?.fsPath ?? active?.path;
    } catch (e) {
        output.warn(`Could not ask the Python extension for its interpreter: ${String(e)}`);
        return undefined;
    }
}

function watchPythonExtension(context: vscode.ExtensionContext): void {
    const ext = vscode.extensions.getExtension('ms-python.python');
    if (!ext) {
        return;
    }
    void pythonEnvironments().then((envs) => {
        const event = envs?.onDidChangeActiveEnvironmentPath;
        if (event) {
            context.subscriptions.push(
                event(() => {
                    if (restrictedSetting('interpreter').length === 0) {
                        void restart('the Python extension changed its interpreter');
                    }
                }),
            );
        }
    });
}

// ---------------------------------------------------------------------------------------------------------
// Commands

function isRunning(c: LanguageClient | undefined): c is LanguageClient {
    return c !== undefined && c.state === State.Running;
}

async function runningClient(): Promise<LanguageClient | undefined> {
    await lifecycle;
    if (isRunning(client)) {
        return client;
    }
    const choice = await vscode.window.showErrorMessage(
        'vLLM Log: the language server is not running.',
        'Restart',
        'Show Output',
    );
    if (choice === 'Restart') {
        await restart('command');
        return isRunning(client) ? client : undefined;
    }
    if (choice === 'Show Output') {
        output.show(true);
    }
    return undefined;
}

/** Analyse a log from disk, for logs VS Code will not hand to extensions (over 50 MB). */
async function analyzeFile(uri?: vscode.Uri): Promise<void> {
    let target = uri instanceof vscode.Uri ? uri : undefined;
    if (!target) {
        const picked = await vscode.window.showOpenDialog({
            canSelectFiles: true,
            canSelectFolders: false,
            canSelectMany: false,
            openLabel: 'Analyze',
            title: 'vLLM Log: choose a log to analyse',
            filters: { 'Logs': ['log', 'out', 'txt'], 'All files': ['*'] },
        });
        target = picked?.[0];
    }
    if (!target) {
        return;
    }
    const c = await runningClient();
    if (!c) {
        return;
    }
    const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `vLLM Log: analysing ${target.fsPath}…` },
        () =>
            c.sendRequest(ExecuteCommandRequest.type, {
                command: 'vllmLog.analyzeFile',
                arguments: [target!.toString()],
            }),
    );
    const summary = summarise(target.fsPath, result);
    output.info(`analyzeFile ${target.toString()}: ${summary ?? JSON.stringify(result)}`);
    const choice = await vscode.window.showInformationMessage(
        summary ?? `vLLM Log: analysed ${target.fsPath}. The findings are in the Problems panel.`,
        'Show Problems',
        'Open Log',
    );
    if (choice === 'Show Problems') {
        await vscode.commands.executeCommand('workbench.actions.view.problems');
    } else if (choice === 'Open Log') {
        await vscode.commands.executeCommand('vscode.open', target);
    }
}

/**
 * `vLLM Log: Show Report`: the server renders the same self-contained HTML page as
 * `vllm-log-lsp check --report` (inline SVG, no script) for the active log, or the one clicked in the
 * explorer; it opens in a webview beside the log, with scripts disabled.
 */
async function showReport(uri?: vscode.Uri): Promise<void> {
    const target = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
    if (!target) {
        void vscode.window.showInformationMessage('vLLM Log: open a log first, then run Show Report.');
        return;
    }
    const c = await runningClient();
    if (!c) {
        return;
    }
    const name = target.path.split('/').pop() || target.toString();
    let html: unknown;
    try {
        html = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: `vLLM Log: building the report of ${name}…` },
            () => c.sendRequest(ExecuteCommandRequest.type, { command: 'vllmLog.report', arguments: [target.toString()] }),
        );
    } catch (e) {
        output.warn(`showReport ${target.toString()} failed: ${String(e)}`);
        void vscode.window.showErrorMessage(`vLLM Log: could not build the report of ${name}: ${String(e)}`);
        return;
    }
    if (typeof html !== 'string') {
        return;
    }
    const panel = vscode.window.createWebviewPanel(
        'vllmLogReport',
        `Report: ${name}`,
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
        { enableScripts: false, localResourceRoots: [] },
    );
    panel.webview.html = html;
}

/**
 * The "Copy the fixed launch command" quick fix (offered when the workspace has no launch script): the
 * server rebuilds the command from the log's own args with the fix applied; put it on the clipboard.
 */
async function copyFixedCommand(args: unknown[]): Promise<void> {
    const c = await runningClient();
    if (!c) {
        return;
    }
    try {
        const command = await c.sendRequest(ExecuteCommandRequest.type, {
            command: 'vllmLog.copyFixedCommand',
            arguments: args,
        });
        if (typeof command === 'string' && command) {
            await vscode.env.clipboard.writeText(command);
            void vscode.window.showInformationMessage(`vLLM Log: copied the fixed launch command: ${command}`);
        }
    } catch (e) {
        output.warn(`copyFixedCommand failed: ${String(e)}`);
    }
}

/**
 * Jump from a symptom line (EngineDeadError, ...) to its root cause: the server's definition provider at
 * the cursor. With arguments (the server's code lenses pass [uri, line]) the server shows the place itself.
 */
async function goToRootCause(args: unknown[] = []): Promise<void> {
    if (args.length >= 2 && typeof args[0] === 'string' && typeof args[1] === 'number') {
        const c = await runningClient();
        if (c) {
            try {
                await c.sendRequest(ExecuteCommandRequest.type, { command: 'vllmLog.goToRootCause', arguments: args });
                return;
            } catch (e) {
                output.warn(`goToRootCause through the server failed: ${String(e)}`);
            }
        }
        const line = args[1] as number;
        await vscode.window.showTextDocument(vscode.Uri.parse(args[0] as string), {
            selection: new vscode.Range(line, 0, line, 0),
        });
        return;
    }
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
        return;
    }
    const doc = editor.document;
    const locations = await vscode.commands.executeCommand<(vscode.Location | vscode.LocationLink)[]>(
        'vscode.executeDefinitionProvider',
        doc.uri,
        editor.selection.active,
    );
    let target: { uri: vscode.Uri; range: vscode.Range } | undefined;
    const first = locations?.[0];
    if (first) {
        target =
            'targetUri' in first
                ? { uri: first.targetUri, range: first.targetSelectionRange ?? first.targetRange }
                : { uri: first.uri, range: first.range };
    } else {
        // Not on a symptom line: go to the first error the server reported in this document.
        const errors = vscode.languages
            .getDiagnostics(doc.uri)
            .filter((d) => d.severity === vscode.DiagnosticSeverity.Error && /vllm/i.test(d.source ?? ''))
            .sort((a, b) => a.range.start.line - b.range.start.line);
        if (errors[0]) {
            target = { uri: doc.uri, range: errors[0].range };
        }
    }
    if (!target) {
        void vscode.window.showInformationMessage('vLLM Log: no root cause found for this log.');
        return;
    }
    const shown = await vscode.window.showTextDocument(target.uri, { selection: target.range, preserveFocus: false });
    shown.revealRange(target.range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}
