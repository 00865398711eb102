// `eval --report DIR`: report.json and a self-contained report.html (uPlot inlined, no network) with the mean
// score per version and a table per item, so a comparison can be opened anywhere and kept as an artefact.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { VersionsReport } from './eval-versions.js';

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

const fmt = (value: number | null) => (value === null ? '-' : value.toFixed(3));

async function uplotAssets(): Promise<{ js: string; css: string }> {
  const dist = dirname(createRequire(import.meta.url).resolve('uplot/dist/uPlot.iife.min.js'));
  const [js, css] = await Promise.all([
    readFile(join(dist, 'uPlot.iife.min.js'), 'utf8'),
    readFile(join(dist, 'uPlot.min.css'), 'utf8'),
  ]);
  return { js, css };
}

/** The page: a chart of the mean per version, then per item its mean per version. */
export function reportHtml(report: VersionsReport, assets: { js: string; css: string }): string {
  const labels = report.versions.map((v) => v.label);
  const ids = report.versions[0]?.items.map((i) => i.id) ?? [];
  const head = labels.map((l) => `<th>${escapeHtml(l)}</th>`).join('');
  const rows = ids
    .map((id, index) => {
      const cells = report.versions.map((v) => `<td>${fmt(v.items[index]?.mean ?? null)}</td>`).join('');
      return `<tr><td>${escapeHtml(id)}</td>${cells}</tr>`;
    })
    .join('\n');
  const means = report.versions.map((v) => `<td><b>${fmt(v.mean)}</b></td>`).join('');
  // Data go in as JSON in a script of type application/json, never spliced into code.
  const data = JSON.stringify({ labels, means: report.versions.map((v) => v.mean) }).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Evaluation: ${escapeHtml(report.scorer)}</title>
<style>${assets.css}
body{font-family:system-ui,sans-serif;margin:2rem}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .6rem;text-align:right}td:first-child{text-align:left}</style>
</head><body>
<h1>Score per version</h1>
<p>Scorer <code>${escapeHtml(report.scorer)}</code>, ${report.samples} seeded replies per item, at most ${report.maxTokens} tokens, temperature ${report.temperature}; ${escapeHtml(report.at)}.</p>
<div id="chart"></div>
<h2>Per item</h2>
<table id="items"><thead><tr><th>item</th>${head}</tr></thead><tbody>
${rows}
<tr><td><b>mean</b></td>${means}</tr>
</tbody></table>
<script type="application/json" id="data">${data}</script>
<script>${assets.js}</script>
<script>
const d = JSON.parse(document.getElementById('data').textContent);
const xs = d.labels.map((_, i) => i);
new uPlot({ title: 'mean score', width: 640, height: 300,
  scales: { x: { time: false } },
  axes: [{ values: (u, ticks) => ticks.map((t) => d.labels[t] ?? '') }, {}],
  series: [{ label: 'version', value: (u, v) => d.labels[v] ?? '' }, { label: 'mean', stroke: '#2563eb', width: 2, points: { size: 7 } }],
}, [xs, d.means], document.getElementById('chart'));
</script>
</body></html>
`;
}

/** Writes `report.json` and `report.html` into `dir` (created); returns their paths. */
export async function writeVersionsReport(
  dir: string,
  report: VersionsReport,
): Promise<{ json: string; html: string }> {
  await mkdir(dir, { recursive: true });
  const json = join(dir, 'report.json');
  const html = join(dir, 'report.html');
  await writeFile(json, `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(html, reportHtml(report, await uplotAssets()));
  return { json, html };
}
