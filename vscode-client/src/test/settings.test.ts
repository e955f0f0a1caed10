import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import { serverSettings, trustedValue } from '../settings';

test('the server gets the section without interpreter, serverArgs and trace', () => {
    const section = {
        interpreter: ['/usr/bin/python3'],
        serverArgs: ['-v'],
        trace: { server: 'verbose' },
        diagnostics: { precursors: false, severityOverrides: { 'cuda-oom': 'warning' } },
        rules: { extraFiles: ['rules.toml'] },
        maxFileSizeMB: 200,
        launchScripts: { include: ['**/*.sh'], exclude: [] },
        get: () => 1, // WorkspaceConfiguration methods are dropped
    };
    assert.deepEqual(serverSettings(section), {
        diagnostics: { precursors: false, severityOverrides: { 'cuda-oom': 'warning' } },
        rules: { extraFiles: ['rules.toml'] },
        maxFileSizeMB: 200,
        launchScripts: { include: ['**/*.sh'], exclude: [] },
    });
    assert.deepEqual(serverSettings(undefined), {});
});

test('in Restricted Mode only the user value (or the default) of a restricted setting counts', () => {
    const inspected = { defaultValue: [], globalValue: ['/usr/bin/python3'], workspaceValue: ['./evil'] };
    assert.deepEqual(trustedValue(inspected, ['./evil'], true), ['./evil']);
    assert.deepEqual(trustedValue(inspected, ['./evil'], false), ['/usr/bin/python3']);
    assert.deepEqual(trustedValue({ defaultValue: [], workspaceValue: ['./evil'] }, ['./evil'], false), []);
});
