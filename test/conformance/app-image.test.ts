// The app image (docker/app.Dockerfile) copies each source folder by name: a folder the CLI imports that the
// image leaves out fails only when compose starts (ERR_MODULE_NOT_FOUND in data-init). Checked here from the
// CLI's own import graph, without building the image.
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The top-level folders of every file reachable from `entry` through relative imports. */
function importedFolders(entry: string): Set<string> {
  const seen = new Set<string>();
  const folders = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    folders.add(relative(root, file).split('/')[0] as string);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
      const target = resolve(dirname(file), match[1] as string).replace(/\.js$/, '.ts');
      if (target.endsWith('.ts')) visit(target);
    }
  };
  visit(entry);
  return folders;
}

describe('the app image', () => {
  it('copies every source folder the CLI imports', () => {
    const dockerfile = readFileSync(join(root, 'docker/app.Dockerfile'), 'utf8');
    const copied = new Set([...dockerfile.matchAll(/^COPY (\S+) \.\/\S+$/gm)].map((m) => m[1] as string));
    const needed = [...importedFolders(join(root, 'cli/main.ts'))].sort();
    expect(needed).toContain('engines');
    expect(needed.filter((folder) => !copied.has(folder))).toEqual([]);
  });
});
