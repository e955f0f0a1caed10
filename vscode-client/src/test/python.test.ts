import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';

import {
    checkInterpreter,
    defaultPython,
    describeFailures,
    findInterpreter,
    interpreterCandidates,
    parseVersion,
    Runner,
    serverLaunch,
    versionAtLeast,
} from '../python';

function fakeRunner(answers: Record<string, string | NodeJS.ErrnoException>): Runner {
    return async (file, args) => {
        assert.deepEqual(args.slice(-2), ['-c', 'import sys; print(sys.version_info[:2])']);
        const a = answers[file];
        if (a === undefined || a instanceof Error) {
            throw a ?? Object.assign(new Error(`spawn ${file} ENOENT`), { code: 'ENOENT' });
        }
        return { stdout: a, stderr: '' };
    };
}

test('the setting wins and is the only candidate', () => {
    assert.deepEqual(interpreterCandidates(['/opt/py/bin/python', '-X', 'utf8'], '/venv/bin/python', 'linux'), [
        { command: ['/opt/py/bin/python', '-X', 'utf8'], source: 'setting' },
    ]);
});

test('without a setting: the Python extension, then the platform default', () => {
    assert.deepEqual(interpreterCandidates([], '/venv/bin/python', 'linux'), [
        { command: ['/venv/bin/python'], source: 'python-extension' },
        { command: ['python3'], source: 'default' },
    ]);
    assert.deepEqual(interpreterCandidates(undefined, undefined, 'win32'), [{ command: ['python'], source: 'default' }]);
    assert.deepEqual(interpreterCandidates(['', '  '], '', 'darwin'), [{ command: ['python3'], source: 'default' }]);
    assert.equal(defaultPython('win32'), 'python');
    assert.equal(defaultPython('linux'), 'python3');
});

test('parses and compares versions', () => {
    assert.deepEqual(parseVersion('(3, 11)\n'), [3, 11]);
    assert.deepEqual(parseVersion('(3,9)'), [3, 9]);
    assert.equal(parseVersion('Python was not found; run without arguments to install from the Microsoft Store'), undefined);
    assert.ok(versionAtLeast([3, 10]));
    assert.ok(versionAtLeast([3, 13]));
    assert.ok(versionAtLeast([4, 0]));
    assert.ok(!versionAtLeast([3, 9]));
    assert.ok(!versionAtLeast([2, 7]));
});

test('a missing or too-old Python is reported with the reason', async () => {
    const run = fakeRunner({ old: '(3, 8)\n', good: '(3, 12)\n', junk: 'hello' });
    const missing = await checkInterpreter({ command: ['nope'], source: 'default' }, run);
    assert.deepEqual(missing, { command: ['nope'], source: 'default', reason: 'not found' });
    const old = await checkInterpreter({ command: ['old'], source: 'setting' }, run);
    assert.match((old as { reason: string }).reason, /3\.8.*3\.10 or newer/);
    const junk = await checkInterpreter({ command: ['junk'], source: 'setting' }, run);
    assert.match((junk as { reason: string }).reason, /no Python version/);
    const good = await checkInterpreter({ command: ['good', '-I'], source: 'setting' }, run);
    assert.deepEqual(good, { command: ['good', '-I'], source: 'setting', version: [3, 12] });
});

test('findInterpreter falls through to the first usable candidate', async () => {
    const run = fakeRunner({ '/venv/bin/python': '(3, 9)', python3: '(3, 11)' });
    const { found, failures } = await findInterpreter(interpreterCandidates([], '/venv/bin/python', 'linux'), run);
    assert.deepEqual(found, { command: ['python3'], source: 'default', version: [3, 11] });
    assert.equal(failures.length, 1);
    const none = await findInterpreter(interpreterCandidates(['/missing/python'], undefined, 'linux'), run);
    assert.equal(none.found, undefined);
    assert.match(describeFailures(none.failures), /'\/missing\/python' \(from vllmLog.interpreter\) not found/);
});

test('the real interpreter running these tests passes the check', async () => {
    const py = process.env.VLLM_LOG_TEST_PYTHON;
    if (!py) {
        return; // set by tests/editors/test_vscode.py
    }
    const r = await checkInterpreter({ command: [py], source: 'setting' });
    assert.ok('version' in r, JSON.stringify(r));
});

test('server launch: isolated Python, the bundled launcher, the extension folder as cwd', () => {
    const l = serverLaunch(['py', '-3.12'], '/ext', ['--log-level', 'debug'], { PATH: '/bin', PYTHONPATH: '/mine' });
    assert.equal(l.command, 'py');
    assert.deepEqual(l.args, [
        '-3.12',
        '-I',
        '-X',
        'utf8',
        path.join('/ext', 'launcher', 'start_server.py'),
        'serve',
        '--log-level',
        'debug',
    ]);
    assert.equal(l.cwd, '/ext');
    assert.equal(l.env.PATH, '/bin');
});

/**
 * The launch command, run for real in a folder holding the files a hostile workspace would plant:
 * `vllm_log_lsp/__main__.py` (what `python -m vllm_log_lsp` from that folder would run) and `uuid.py` (a
 * standard module the server imports). Even with that folder as the working directory and on
 * PYTHONPATH, the bundled server answers `initialize` and neither file runs.
 */
test('the launched server imports nothing from the working directory or PYTHONPATH', async () => {
    const py = process.env.VLLM_LOG_TEST_PYTHON;
    if (!py) {
        return; // set by tests/editors/test_vscode.py
    }
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'vllm-log-launch-'));
    const ext = path.join(tmp, 'extension');
    const workspace = path.join(tmp, 'workspace');
    const marker = path.join(tmp, 'PWNED');
    mkdirSync(path.join(ext, 'launcher'), { recursive: true });
    mkdirSync(path.join(ext, 'bundled', 'libs'), { recursive: true });
    copyFileSync(path.join(__dirname, '..', '..', 'launcher', 'start_server.py'), path.join(ext, 'launcher', 'start_server.py'));
    symlinkSync(path.resolve(__dirname, '..', '..', '..', 'server'), path.join(ext, 'bundled', 'server'));
    const evil = `open(${JSON.stringify(marker)}, "a").write(__name__ + "\\n")\n`;
    mkdirSync(path.join(workspace, 'vllm_log_lsp'), { recursive: true });
    writeFileSync(path.join(workspace, 'vllm_log_lsp', '__init__.py'), evil);
    writeFileSync(path.join(workspace, 'vllm_log_lsp', '__main__.py'), evil);
    writeFileSync(path.join(workspace, 'uuid.py'), evil);
    try {
        const l = serverLaunch([py], ext, [], { ...process.env, PYTHONPATH: workspace });
        const frame = (msg: object) => {
            const body = Buffer.from(JSON.stringify(msg));
            return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]);
        };
        const input = Buffer.concat([
            frame({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { processId: null, rootUri: null, capabilities: {} } }),
            frame({ jsonrpc: '2.0', method: 'initialized', params: {} }),
            frame({ jsonrpc: '2.0', id: 2, method: 'shutdown' }),
            frame({ jsonrpc: '2.0', method: 'exit' }),
        ]);
        // The working directory is the hostile folder here (not the extension's), to show -I alone is enough.
        const out = spawnSync(l.command, l.args, { cwd: workspace, env: l.env, input, timeout: 60000 });
        assert.match(String(out.stdout), /"capabilities"/, String(out.stderr).slice(-2000));
        assert.equal(existsSync(marker), false, existsSync(marker) ? readFileSync(marker, 'utf8') : '');
    } finally {
        rmSync(tmp, { recursive: true, force: true });
    }
});
