import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import { looksLikeVllmLog, mayBecomeVllmLog, SNIFF_LINES, sniffHead } from '../sniff';

test('what vLLM prints makes a log a vLLM log, in every version of its format', () => {
    for (const line of [
        '(APIServer pid=1) INFO 11-10 12:30:50 [api_server.py:1839] vLLM API server version 0.11.0',
        'INFO 01-02 03:04:05 api_server.py:585] vLLM API server version 0.6.3',
        'WARNING 03-09 12:54:16.123 [v1/engine/core.py:100] slow',
        '\x1b[1;36m(EngineCore_DP0 pid=7)\x1b[0;0m some raw line a worker printed',
        '(VllmWorker rank=1 pid=2) torch.OutOfMemoryError: CUDA out of memory.',
        '(Worker_TP1_EP1 pid=3) Traceback (most recent call last):',
        'vllm-1  | vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.',
        '2026-02-22T06:34:50+0000 host vllm[42]: INFO 02-22 06:34:50 [launcher.py:1] up',
    ]) {
        assert.equal(looksLikeVllmLog(`some preamble\n${line}\nmore\n`), true, line);
    }
});

test('other logs stay logs, also when they mention vllm', () => {
    for (const text of [
        '2024-01-01 12:00:00 INFO something else entirely\n',
        'Collecting vllm==0.11.0\n  Downloading vllm-0.11.0-cp38-abi3-manylinux1_x86_64.whl (400 MB)\n',
        '127.0.0.1 - - [01/Jan/2024:00:00:00 +0000] "GET /vllm HTTP/1.1" 200 612\n',
        '[2024-01-01 00:00:00,000] ERROR in app: Exception on /generate [POST]\n',
        '',
    ]) {
        assert.equal(looksLikeVllmLog(text), false, text);
    }
});

test('only the first lines count', () => {
    const filler = 'plain line\n'.repeat(SNIFF_LINES + 5);
    assert.equal(looksLikeVllmLog(filler + '(APIServer pid=1) INFO 11-10 12:30:50 [api_server.py:1] x\n'), false);
    assert.equal(sniffHead(filler).split('\n').length, SNIFF_LINES);
    // A huge first line is cut, not scanned whole.
    assert.ok(sniffHead('x'.repeat(10_000_000)).length <= 64_000);
});

test('only Log and plain-text logs may be switched', () => {
    assert.equal(mayBecomeVllmLog('log', '/w/server.log'), true);
    assert.equal(mayBecomeVllmLog('log', '/w/anything'), true); // VS Code chose Log for it
    assert.equal(mayBecomeVllmLog('plaintext', '/w/run.out'), true);
    assert.equal(mayBecomeVllmLog('plaintext', '/w/server.log.1'), true);
    assert.equal(mayBecomeVllmLog('plaintext', '/w/notes.txt'), false);
    assert.equal(mayBecomeVllmLog('python', '/w/serve.log'), false);
    assert.equal(mayBecomeVllmLog('vllm-log', '/w/serve.log'), false); // already
});
