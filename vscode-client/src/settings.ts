// Settings: what the server receives, and what only the client uses. Pure (no `vscode` import).

/** Keys of the `vllmLog` section that only the client uses; they are never sent to the server. */
export const CLIENT_ONLY_KEYS = ['interpreter', 'serverArgs', 'trace', 'detectLanguage'] as const;

/** Keys whose change needs a new server process (everything else is sent with didChangeConfiguration). */
export const RESTART_KEYS = ['vllmLog.interpreter', 'vllmLog.serverArgs'] as const;

export type SettingsObject = { [key: string]: unknown };

/**
 * The `vllmLog` section as a plain nested object (as VS Code returns it) minus the client-only keys:
 * this is the server's `initializationOptions` and the `vllmLog` member of didChangeConfiguration.
 */
export function serverSettings(section: unknown): SettingsObject {
    const plain: SettingsObject =
        section && typeof section === 'object' ? (JSON.parse(JSON.stringify(section)) as SettingsObject) : {};
    for (const k of CLIENT_ONLY_KEYS) {
        delete plain[k];
    }
    return plain;
}

/**
 * Server settings that make the server read files a workspace could choose (`/dev/stdin`, a FIFO, a rule
 * that hides every diagnosis): in Restricted Mode only their user (global) value is sent.
 */
export const RESTRICTED_SERVER_KEYS = ['rules.extraFiles'] as const;

/** A value from `WorkspaceConfiguration.inspect()`, the subset we read. */
export interface Inspected<T> {
    defaultValue?: T;
    globalValue?: T;
    workspaceValue?: T;
    workspaceFolderValue?: T;
}

/**
 * The effective value of a setting that can choose a program to run. In a trusted workspace it is the usual
 * merged value; in Restricted Mode only the user's (global) value or the default counts.
 */
export function trustedValue<T>(inspected: Inspected<T> | undefined, merged: T | undefined, trusted: boolean): T | undefined {
    if (trusted) {
        return merged;
    }
    if (!inspected) {
        return undefined;
    }
    return inspected.globalValue !== undefined ? inspected.globalValue : inspected.defaultValue;
}

/**
 * `settings` (from `serverSettings`) with each of RESTRICTED_SERVER_KEYS replaced by its trusted value:
 * unchanged in a trusted workspace; in Restricted Mode the user's value or the default, never a value from
 * the workspace or a folder. `inspect` is `WorkspaceConfiguration.inspect` of the same scope.
 */
export function restrictServerSettings(
    settings: SettingsObject,
    inspect: (key: string) => Inspected<unknown> | undefined,
    trusted: boolean,
): SettingsObject {
    if (trusted) {
        return settings;
    }
    const out = JSON.parse(JSON.stringify(settings)) as SettingsObject;
    for (const key of RESTRICTED_SERVER_KEYS) {
        const parts = key.split('.');
        let node = out;
        for (const part of parts.slice(0, -1)) {
            if (!node[part] || typeof node[part] !== 'object') {
                node[part] = {};
            }
            node = node[part] as SettingsObject;
        }
        const value = trustedValue(inspect(key), undefined, false);
        node[parts[parts.length - 1]] = value === undefined ? [] : JSON.parse(JSON.stringify(value));
    }
    return out;
}
