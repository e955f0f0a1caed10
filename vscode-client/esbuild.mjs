// Bundles the extension (and, with --tests, the node-side unit tests) with esbuild.
import * as esbuild from 'esbuild';
import { readdirSync } from 'node:fs';

const common = { bundle: true, platform: 'node', format: 'cjs', target: 'node18', logLevel: 'warning' };

if (process.argv.includes('--tests')) {
    const tests = readdirSync('src/test').filter((f) => f.endsWith('.test.ts')).map((f) => `src/test/${f}`);
    await esbuild.build({ ...common, entryPoints: tests, outdir: 'out/test', external: ['vscode'] });
} else {
    await esbuild.build({
        ...common,
        entryPoints: ['src/extension.ts'],
        outfile: 'out/extension.js',
        external: ['vscode'],
        sourcemap: process.argv.includes('--sourcemap'),
        minify: process.argv.includes('--minify'),
    });
}
