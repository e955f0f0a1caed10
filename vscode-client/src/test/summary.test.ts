import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import { summarise } from '../summary';

test('analyzeFile results become one line', () => {
    const result = {
        uri: 'file:///logs/big.log',
        healthy: false,
        skipped: null,
        findings: [{ line: 109, title: 'CUDA out of memory', phase: 'memory profiling', ruleId: 'cuda-oom' }],
    };
    assert.equal(
        summarise('/logs/big.log', result),
        'vLLM Log: /logs/big.log: CUDA out of memory (line 109, memory profiling). Details are in the Problems panel.',
    );
    assert.equal(summarise('/x.log', { findings: [], healthy: true }), 'vLLM Log: no engine death found in /x.log.');
    assert.match(summarise('/x.log', { skipped: 'not a vLLM log' }) ?? '', /not analysed: not a vLLM log/);
    const many = { findings: [1, 2, 3, 4, 5].map((line) => ({ line, title: 'NCCL error' })) };
    assert.match(summarise('/x.log', many) ?? '', /and 2 more/);
    assert.equal(summarise('/x.log', 'done'), 'done');
    assert.equal(summarise('/x.log', null), undefined);
});
