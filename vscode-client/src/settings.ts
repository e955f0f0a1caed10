// Settings: what the server receives, and what only the client uses. Pure (no `vscode` import).

/** Keys of the `vllmLog` section that only the client uses; they are never sent to the server. */
export const CLIENT_ONLY_KEYS = ['interpreter', 'serverArgs', 'trace'] as const;

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
