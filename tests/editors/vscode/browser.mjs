// Headless Chromium as these tests launch it (Debian's chromium through playwright-core): no sandbox
// (root in a container), no GPU, and nothing that reaches the network on its own.
import { chromium } from 'playwright-core';

export const CHROMIUM_ARGS = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-dev-shm-usage',
];

export function launchChromium(executablePath) {
    return chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS });
}
