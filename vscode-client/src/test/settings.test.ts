import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import { restrictServerSettings, serverSettings, trustedValue } from '../settings';

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

test('in Restricted Mode the server gets only the user value of rules.extraFiles', () => {
    const settings = { rules: { extraFiles: ['/dev/stdin'] }, maxFileSizeMB: 5 };
    const seen: string[] = [];
    const inspect = (key: string) => {
        seen.push(key);
        return { defaultValue: [], globalValue: ['~/my-rules.toml'], workspaceFolderValue: ['/dev/stdin'] };
    };
    assert.deepEqual(restrictServerSettings(settings, inspect, true), settings);
    assert.deepEqual(restrictServerSettings(settings, inspect, false), {
        rules: { extraFiles: ['~/my-rules.toml'] },
        maxFileSizeMB: 5,
    });
    assert.deepEqual(seen, ['rules.extraFiles']);
    // No user value: the default (none), also when the section came without a `rules` object.
    const none = () => ({ defaultValue: [], workspaceValue: ['evil.toml'] });
    assert.deepEqual(restrictServerSettings({ maxFileSizeMB: 5 }, none, false), { maxFileSizeMB: 5, rules: { extraFiles: [] } });
    assert.deepEqual(settings.rules.extraFiles, ['/dev/stdin']); // the input is not changed
});
