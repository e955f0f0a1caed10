// Finding a Python interpreter and building the server command line.
// Pure Node: no `vscode` import, so it is unit-tested with `node --test` (src/test/python.test.ts).

import { execFile } from 'node:child_process';
import * as path from 'node:path';

export const MIN_PYTHON: readonly [number, number] = [3, 10];

/** Where an interpreter candidate came from, for messages. */
export type InterpreterSource = 'setting' | 'python-extension' | 'default';

export interface InterpreterCandidate {
    /** Executable followed by its own arguments, e.g. ["py", "-3.12"]. */
    command: string[];
    source: InterpreterSource;
}

export interface CheckedInterpreter extends InterpreterCandidate {
    version: [number, number];
}

export interface InterpreterFailure extends InterpreterCandidate {
    reason: string;
}

/** The plain command that should start a Python on this platform. */
export function defaultPython(platform: NodeJS.Platform = process.platform): string {
    return platform === 'win32' ? 'python' : 'python3';
}

/**
 * The ordered candidates: the `vllmLog.interpreter` setting when set (then only it: a user's explicit
 * choice is never silently replaced), else the Python extension's active interpreter when known, then the
 * platform default.
 */
export function interpreterCandidates(
    setting: readonly string[] | undefined,
    pythonExtensionExecutable: string | undefined,
    platform: NodeJS.Platform = process.platform,
): InterpreterCandidate[] {
    const fromSetting = (setting ?? []).filter((s) => typeof s === 'string' && s.trim() !== '');
    if (fromSetting.length > 0) {
        return [{ command: [...fromSetting], source: 'setting' }];
    }
    const out: InterpreterCandidate[] = [];
    if (pythonExtensionExecutable && pythonExtensionExecutable.trim() !== '') {
        out.push({ command: [pythonExtensionExecutable], source: 'python-extension' });
    }
    out.push({ command: [defaultPython(platform)], source: 'default' });
    return out;
}

export const VERSION_PROBE = 'import sys; print(sys.version_info[:2])';
/** `-I`: the probe, like the server, never imports from the working directory. */
export const PROBE_FLAGS = ['-I'];

/** Parses the output of VERSION_PROBE, "(3, 11)", into [3, 11]; undefined if it is not that. */
export function parseVersion(output: string): [number, number] | undefined {
    const m = /\(\s*(\d+)\s*,\s*(\d+)\s*\)/.exec(output);
    if (!m) {
        return undefined;
    }
    return [Number(m[1]), Number(m[2])];
}

export function versionAtLeast(v: readonly [number, number], min: readonly [number, number] = MIN_PYTHON): boolean {
    return v[0] > min[0] || (v[0] === min[0] && v[1] >= min[1]);
}

export type Runner = (
    file: string,
    args: string[],
    timeoutMs: number,
) => Promise<{ stdout: string; stderr: string }>;

export const execRunner: Runner = (file, args, timeoutMs) =>
    new Promise((resolve, reject) => {
        execFile(file, args, { timeout: timeoutMs, windowsHide: true }, (err, stdout, stderr) => {
            if (err) {
                reject(Object.assign(err, { stdout: String(stdout), stderr: String(stderr) }));
            } else {
                resolve({ stdout: String(stdout), stderr: String(stderr) });
            }
        });
    });

/** Runs the candidate and returns its version, or why it can't be used. */
export async function checkInterpreter(
    candidate: InterpreterCandidate,
    run: Runner = execRunner,
    timeoutMs = 15000,
): Promise<CheckedInterpreter | InterpreterFailure> {
    const [file, ...args] = candidate.command;
    let stdout: string;
    try {
        ({ stdout } = await run(file, [...args, ...PROBE_FLAGS, '-c', VERSION_PROBE], timeoutMs));
    } catch (e) {
        const err = e as NodeJS.ErrnoException & { stderr?: string; killed?: boolean };
        let reason: string;
        if (err.code === 'ENOENT') {
            reason = 'not found';
        } else if (err.killed) {
            reason = `did not answer within ${Math.round(timeoutMs / 1000)} s`;
        } else {
            const detail = (err.stderr ?? '').trim().split(/\r?\n/).pop() || err.message;
            reason = `failed to run (${detail})`;
        }
        return { ...candidate, reason };
    }
    const version = parseVersion(stdout);
    if (!version) {
        return { ...candidate, reason: `printed no Python version (${stdout.trim().slice(0, 80)})` };
    }
    if (!versionAtLeast(version)) {
        return {
            ...candidate,
            reason: `is Python ${version.join('.')}, but ${MIN_PYTHON.join('.')} or newer is needed`,
        };
    }
    return { ...candidate, version };
}

export function isFailure(x: CheckedInterpreter | InterpreterFailure): x is InterpreterFailure {
    return (x as InterpreterFailure).reason !== undefined;
}

/** Tries the candidates in order; returns the first usable one and the failures before it. */
export async function findInterpreter(
    candidates: readonly InterpreterCandidate[],
    run: Runner = execRunner,
): Promise<{ found?: CheckedInterpreter; failures: InterpreterFailure[] }> {
    const failures: InterpreterFailure[] = [];
    for (const c of candidates) {
        const r = await checkInterpreter(c, run);
        if (isFailure(r)) {
            failures.push(r);
        } else {
            return { found: r, failures };
        }
    }
    return { failures };
}

const SOURCE_LABEL: Record<InterpreterSource, string> = {
    setting: 'vllmLog.interpreter',
    'python-extension': 'Python extension',
    default: 'PATH',
};

/** One human sentence about everything that was tried. */
export function describeFailures(failures: readonly InterpreterFailure[]): string {
    if (failures.length === 0) {
        return 'No Python interpreter was found.';
    }
    return failures
        .map((f) => `'${f.command.join(' ')}' (from ${SOURCE_LABEL[f.source]}) ${f.reason}`)
        .join('; ');
}

export interface ServerLaunch {
    command: string;
    args: string[];
    env: Record<string, string>;
    /** The extension's own folder: never a workspace folder (vscode-languageclient's default). */
    cwd: string;
}

/** The script that puts the bundled server and its libraries on `sys.path` and starts it. */
export function launcherScript(extensionPath: string): string {
    return path.join(extensionPath, 'launcher', 'start_server.py');
}

/**
 * `<python> [python args] -I -X utf8 <extension>/launcher/start_server.py serve [serverArgs]`, run in the
 * extension's folder. `-I` (isolated mode, Python 3.4+) keeps the working directory, the script's folder,
 * `PYTHONPATH` and the user site-packages off `sys.path`: a workspace holding `vllm_log_lsp/` or `uuid.py`
 * is never imported; the launcher puts only the bundled folders first. `-X utf8` stands in for
 * `PYTHONIOENCODING`, which `-I` ignores.
 */
export function serverLaunch(
    interpreter: readonly string[],
    extensionPath: string,
    serverArgs: readonly string[] = [],
    baseEnv: NodeJS.ProcessEnv = process.env,
): ServerLaunch {
    const [command, ...pyArgs] = interpreter;
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(baseEnv)) {
        if (v !== undefined) {
            env[k] = v;
        }
    }
    return {
        command,
        args: [...pyArgs, '-I', '-X', 'utf8', launcherScript(extensionPath), 'serve', ...serverArgs],
        env,
        cwd: extensionPath,
    };
}
