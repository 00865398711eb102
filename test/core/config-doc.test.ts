import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderConfigurationDoc } from '../../core/config-doc.js';
import { CONFIG_OPTIONS } from '../../core/config-options.js';

const docPath = fileURLToPath(new URL('../../docs/configuration.md', import.meta.url));

describe('docs/configuration.md', () => {
  it('is the page rendered from the option table (UPDATE_DOCS=1 rewrites it)', () => {
    const rendered = renderConfigurationDoc();
    if (process.env.UPDATE_DOCS === '1') writeFileSync(docPath, rendered);
    expect(readFileSync(docPath, 'utf8')).toBe(rendered);
  });

  it('lists every option with its variable', () => {
    const doc = readFileSync(docPath, 'utf8');
    for (const option of CONFIG_OPTIONS) {
      expect(doc).toMatch(new RegExp(`\\| \`${option.key}\` +\\| \`${option.env}\` +\\|`));
    }
  });
});
