// @ts-nocheck -- browser code (DOM, uPlot's global): the project's type check covers Node code only.
// The dashboard page: asks for the API key once (kept in localStorage, sent as a bearer), then polls the
// gateway's /dashboard/api every few seconds and draws each visible training run's plots with uPlot, over
// policy versions or over time. Text from the API is only ever set as textContent.

const POLL_MS = 3000;
const KEY_STORAGE = 'openclaw-dashboard-key';
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

/** Every plot of a run: a title, where its numbers come from, and its series (one value per version). */
const PLOTS = [
  {
    id: 'reward',
    title: 'Reward mean',
    note: 'mean reward of the samples each version trained on',
    series: [{ label: 'reward mean', value: (v) => v.stats.rewardMean }],
  },
  {
    id: 'votes',
    title: 'Vote mix',
    note: 'samples by reward sign, and the judge votes (+1 / 0 / −1) behind them',
    series: [
      { label: 'reward +', value: (v) => v.stats.rewards.positive },
      { label: 'reward 0', value: (v) => v.stats.rewards.zero },
      { label: 'reward −', value: (v) => v.stats.rewards.negative },
      { label: 'votes +1', value: (v) => v.stats.votes.positive },
      { label: 'votes 0', value: (v) => v.stats.votes.zero },
      { label: 'votes −1', value: (v) => v.stats.votes.negative },
    ],
  },
  {
    id: 'feedback',
    title: 'Explicit feedback',
    note: 'samples whose scoring used a rating or a correction',
    series: [
      { label: 'ratings', value: (v) => v.stats.ratings },
      { label: 'corrections', value: (v) => v.stats.corrections },
    ],
  },
  {
    id: 'loss',
    title: 'Loss',
    note: 'trainer metrics of the step',
    series: [
      { label: 'loss', value: (v) => metric(v, 'loss') },
      { label: 'pg_loss', value: (v) => metric(v, 'pg_loss') },
    ],
  },
  {
    id: 'clip',
    title: 'PG clip fraction',
    series: [{ label: 'pg_clipfrac', value: (v) => metric(v, 'pg_clipfrac') }],
  },
  {
    id: 'kl',
    title: 'KL',
    series: [
      { label: 'ppo_kl', value: (v) => metric(v, 'ppo_kl') },
      { label: 'kl_loss', value: (v) => metric(v, 'kl_loss') },
    ],
  },
  { id: 'entropy', title: 'Entropy', series: [{ label: 'entropy', value: (v) => metric(v, 'entropy') }] },
  { id: 'grad', title: 'Grad norm', series: [{ label: 'grad_norm', value: (v) => metric(v, 'grad_norm') }] },
  {
    id: 'samples',
    title: 'Samples per step',
    series: [{ label: 'samples', value: (v) => v.sampleCount }],
  },
  {
    id: 'staleness',
    title: 'Staleness (policy lag)',
    note: 'versions between the policy that served a sample and the one it trained from',
    series: [
      { label: 'mean lag', value: (v) => v.stats.stalenessMean },
      { label: 'max lag', value: (v) => v.stats.stalenessMax },
    ],
  },
  {
    id: 'teacher',
    title: 'Teacher − student log-prob gap',
    note: 'mean per token over opd and opd+rl samples',
    series: [{ label: 'gap', value: (v) => v.stats.teacherGap }],
  },
  {
    id: 'hints',
    title: 'Hint acceptance',
    series: [
      { label: 'hints asked', value: (v) => v.stats.hintsAsked },
      { label: 'hints accepted', value: (v) => v.stats.hintsAccepted },
    ],
  },
  {
    id: 'evaluation',
    title: 'Evaluation score',
    note: 'the publish gate: score against the served baseline; red marks held versions',
    series: [
      { label: 'score', value: (v) => (v.evaluation ? v.evaluation.score : null) },
      { label: 'baseline', value: (v) => (v.evaluation ? v.evaluation.baseline : null) },
      {
        label: 'held',
        value: (v) => (v.evaluation && v.evaluation.decision === 'held' ? v.evaluation.score : null),
        marker: true,
      },
    ],
  },
];

function metric(version, name) {
  const value = version.metrics[name];
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** What tests and curious people can inspect: each run's versions and its uPlot instances. */
const state = { runs: {}, axis: 'version', sessions: '', agentic: {} };
window.dashboard = state;

function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  for (const child of children || [])
    node.append(typeof child === 'string' || typeof child === 'number' ? String(child) : child);
  return node;
}

function key() {
  return localStorage.getItem(KEY_STORAGE) || '';
}

class Unauthorized extends Error {}

async function api(path) {
  const headers = key() ? { authorization: `Bearer ${key()}` } : {};
  const response = await fetch(path, { headers });
  if (response.status === 401) throw new Unauthorized((await response.json()).error.message);
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

function showLogin(message) {
  document.getElementById('login').hidden = false;
  document.getElementById('main').hidden = true;
  document.getElementById('login-error').textContent = message || '';
}

function xOf(version) {
  if (state.axis === 'version') return version.version;
  return version.time ? Date.parse(version.time) / 1000 : null;
}

function plotData(versions, plot) {
  // uPlot needs ascending x: versions' times need not be in version order (fallback times are turns' times).
  const points = versions.filter((v) => xOf(v) !== null).sort((a, b) => xOf(a) - xOf(b));
  return [points.map(xOf), ...plot.series.map((s) => points.map((v) => s.value(v) ?? null))];
}

function makePlot(target, title, seriesDefs, data, timeAxis) {
  const width = Math.max(320, target.clientWidth - 8);
  const series = [
    { label: timeAxis ? 'time' : 'version' },
    ...seriesDefs.map((s, i) =>
      s.marker
        ? {
            label: s.label,
            stroke: '#d00',
            paths: () => null,
            points: { show: true, size: 12, stroke: '#d00', fill: '#d00' },
          }
        : { label: s.label, stroke: COLORS[i % COLORS.length], width: 2, points: { show: true, size: 6 } },
    ),
  ];
  return new uPlot(
    {
      title,
      width,
      height: 200,
      scales: { x: { time: timeAxis } },
      // Versions are whole numbers: no ticks between them.
      axes: [timeAxis ? {} : { label: 'policy version', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500] }, {}],
      series,
    },
    data,
    target,
  );
}

function runSection(runId) {
  const id = `run-${runId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  let section = document.getElementById(id);
  if (!section) {
    section = el('section', { class: 'run', id, 'data-run-id': runId }, [
      el('h2', {}, [runId]),
      el('div', { class: 'summary' }),
      el('div', { class: 'plots' }),
      el('h3', {}, ['Exclusions by reason']),
      el('div', { class: 'exclusions' }),
      el('details', {}, [el('summary', {}, ['Versions']), el('div', { class: 'versions' })]),
    ]);
    document.getElementById('runs').append(section);
  }
  return section;
}

function renderSummary(section, view) {
  const latest = view.versions.at(-1);
  const status = view.status;
  const items = [
    ['latest version', latest ? `v${latest.version}` : 'none yet', 'latest-version'],
    ['versions shown', view.versions.length],
  ];
  if (view.tenant) items.push(['adapter of', view.tenant]);
  if (status) {
    items.push(
      ['method', status.method],
      ['policy version', status.policyVersion],
      ['served', status.servedVersion ?? status.policyVersion],
      ['steps', status.stepsCompleted],
      ['pending', status.pendingSamples],
      ['trained', status.samplesTrained],
      ['excluded', status.samplesExcluded],
      ['feedback amended', status.feedbackAmended],
      ['feedback after training', status.feedbackAfterTraining],
    );
    if (status.paused) items.push(['state', 'paused']);
  } else items.push(['status', 'run not answering (lineage from the store)']);
  const summary = section.querySelector('.summary');
  summary.replaceChildren(
    ...items.map(([label, value, cls]) =>
      el('span', {}, [`${label} `, el('b', cls ? { class: cls } : {}, [value])]),
    ),
  );
}

function renderPlots(section, runState) {
  const holder = section.querySelector('.plots');
  for (const plot of Object.values(runState.plots)) plot.destroy();
  runState.plots = {};
  holder.replaceChildren();
  for (const def of PLOTS) {
    const box = el('div', { class: 'plot', 'data-plot': def.id }, [
      el('h3', {}, [def.title]),
      ...(def.note ? [el('p', { class: 'note' }, [def.note])] : []),
    ]);
    holder.append(box);
    runState.plots[def.id] = makePlot(
      box,
      '',
      def.series,
      plotData(runState.versions, def),
      state.axis === 'time',
    );
  }
}

function renderExclusions(section, runState, status) {
  const target = section.querySelector('.exclusions');
  const byReason = status ? status.exclusionsByReason : {};
  runState.exclusionHistory.push({ t: Date.now() / 1000, byReason });
  if (runState.exclusionHistory.length > 1200) runState.exclusionHistory.shift();
  const reasons = [...new Set(runState.exclusionHistory.flatMap((h) => Object.keys(h.byReason)))].sort();
  const table = el('table', {}, [
    el('tr', {}, [el('th', {}, ['reason']), el('th', {}, ['samples excluded'])]),
    ...(reasons.length === 0
      ? [el('tr', {}, [el('td', {}, ['none']), el('td', {}, ['0'])])]
      : reasons.map((r) => el('tr', {}, [el('td', {}, [r]), el('td', {}, [byReason[r] ?? 0])]))),
  ]);
  const data = [
    runState.exclusionHistory.map((h) => h.t),
    ...reasons.map((r) => runState.exclusionHistory.map((h) => h.byReason[r] ?? 0)),
  ];
  const signature = reasons.join(',');
  if (runState.exclusionPlot && runState.exclusionSignature === signature) {
    runState.exclusionPlot.setData(data);
    target.firstChild.replaceWith(table);
    return;
  }
  if (runState.exclusionPlot) runState.exclusionPlot.destroy();
  const plotBox = el('div', { class: 'plot', 'data-plot': 'exclusions' });
  target.replaceChildren(table, plotBox);
  runState.exclusionSignature = signature;
  runState.exclusionPlot =
    reasons.length > 0
      ? makePlot(
          plotBox,
          'exclusions over time (since this page opened)',
          reasons.map((label) => ({ label })),
          data,
          true,
        )
      : null;
}

function renderVersions(section, versions) {
  const rows = [...versions]
    .reverse()
    .map((v) =>
      el('tr', {}, [
        el('td', {}, [`v${v.version}`]),
        el('td', {}, [v.publishedAt ?? (v.time ? `≈ ${v.time}` : '')]),
        el('td', {}, [v.sampleCount]),
        el('td', {}, [v.stats.rewardMean === null ? '' : v.stats.rewardMean.toFixed(3)]),
        el('td', {}, [v.metrics.loss === undefined ? '' : Number(v.metrics.loss).toFixed(4)]),
        el('td', v.evaluation && v.evaluation.decision === 'held' ? { class: 'held' } : {}, [
          v.evaluation
            ? `${v.evaluation.score.toFixed(3)} ${v.evaluation.decision}${v.evaluation.reason ? ` (${v.evaluation.reason})` : ''}`
            : '',
        ]),
      ]),
    );
  section.querySelector('.versions').replaceChildren(
    el('table', {}, [
      el(
        'tr',
        {},
        ['version', 'published', 'samples', 'reward', 'loss', 'evaluation'].map((h) => el('th', {}, [h])),
      ),
      ...rows,
    ]),
  );
}

/** Whether a run got a new version (or verdict) in this refresh: sessions are reread then too. */
async function refreshRuns() {
  let changed = false;
  const listed = await api('/dashboard/api/runs');
  document.getElementById('tenant').textContent = `— tenant ${listed.tenant}`;
  for (const run of listed.data) {
    const view = await api(`/dashboard/api/runs/${encodeURIComponent(run.runId)}`);
    const section = runSection(run.runId);
    if (!state.runs[run.runId])
      state.runs[run.runId] = {
        versions: [],
        plots: {},
        signature: '',
        exclusionHistory: [],
        exclusionPlot: null,
      };
    const runState = state.runs[run.runId];
    runState.versions = view.versions;
    runState.status = view.status;
    renderSummary(section, view);
    const signature = `${state.axis}|${JSON.stringify(view.versions.map((v) => [v.version, v.evaluation, v.time]))}`;
    if (signature !== runState.signature) {
      runState.signature = signature;
      changed = true;
      renderPlots(section, runState);
      renderVersions(section, view.versions);
    }
    renderExclusions(section, runState, view.status);
  }
  return changed;
}

function turnRow(t) {
  const outcome =
    t.outcome.status === 'sample'
      ? `sample ${t.outcome.kind ?? ''} reward ${t.outcome.reward}`
      : t.outcome.status === 'excluded'
        ? `excluded: ${t.outcome.reason}`
        : 'not scored yet';
  const feedback = t.feedback
    .map((f) =>
      [f.rating !== null ? `rating ${f.rating}` : '', f.correction ? `correction “${f.correction}”` : '']
        .filter(Boolean)
        .join(', '),
    )
    .join('; ');
  return el('tr', {}, [
    el('td', {}, [t.turn]),
    el('td', {}, [`v${t.policyVersion}`]),
    el('td', {}, [t.prompt]),
    el('td', {}, [t.reply]),
    el('td', {}, [outcome]),
    el('td', {}, [t.votes.map((v) => (v === null ? '?' : v > 0 ? '+1' : String(v))).join(' ')]),
    el('td', {}, [t.hint ?? '']),
    el('td', {}, [feedback]),
  ]);
}

async function refreshSessions() {
  const listed = await api('/dashboard/api/sessions');
  const text = JSON.stringify(listed.data);
  if (text === state.sessions) return;
  state.sessions = text;
  const target = document.getElementById('sessions');
  if (listed.data.length === 0) {
    target.replaceChildren('no sessions of this tenant yet');
    return;
  }
  target.replaceChildren(
    ...listed.data.map((s) =>
      el('details', { 'data-session': s.sessionId }, [
        el('summary', {}, [`${s.sessionId} — ${s.turns.length} turns, last ${s.lastTurnAt}`]),
        el('table', {}, [
          el(
            'tr',
            {},
            ['turn', 'policy', 'prompt', 'reply', 'outcome', 'votes', 'hint', 'feedback'].map((h) =>
              el('th', {}, [h]),
            ),
          ),
          ...s.turns.map(turnRow),
        ]),
      ]),
    ),
  );
}

async function refreshAgentic() {
  const listed = await api('/dashboard/api/agentic');
  const block = document.getElementById('agentic-block');
  block.hidden = listed.data.length === 0;
  if (listed.data.length === 0) return;
  const rows = listed.data.map((run) => {
    const last = run.lastStep;
    const byStatus = last
      ? Object.entries(last.byStatus)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ')
      : '';
    return el('tr', {}, [
      el('td', {}, [run.runId]),
      el('td', {}, [run.env]),
      el('td', {}, [run.phase]),
      el('td', {}, [`${run.stepsCompleted}/${run.steps}`]),
      el('td', {}, [`v${run.policyVersion}`]),
      el('td', {}, [
        `${run.rollouts.done} done, ${run.rollouts.failed} failed, ${run.rollouts.inFlight} running`,
      ]),
      el('td', {}, [run.meanReward === null ? '' : run.meanReward.toFixed(3)]),
      el('td', {}, [
        last && last.meanReward !== null ? `${last.meanReward.toFixed(3)} (${byStatus})` : byStatus,
      ]),
    ]);
  });
  const table = el('table', {}, [
    el(
      'tr',
      {},
      ['run', 'env', 'phase', 'steps', 'policy', 'rollouts', 'step reward', 'last step'].map((h) =>
        el('th', {}, [h]),
      ),
    ),
    ...rows,
  ]);
  const details = [];
  for (const run of listed.data) details.push(await agenticRunDetails(run.runId));
  document.getElementById('agentic').replaceChildren(table, ...details.filter(Boolean));
}

const STATUSES = ['COMPLETED', 'TRUNCATED', 'FAILED', 'ABORTED'];

/** A plot over training steps: `series` of {label, values, color?, dash?}, `bands` as [upper, lower] indexes. */
function stepPlot(target, title, steps, series, bands) {
  const width = Math.max(320, target.clientWidth - 8);
  return new uPlot(
    {
      title,
      width,
      height: 180,
      scales: { x: { time: false } },
      axes: [{ label: 'training step', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500] }, {}],
      series: [
        { label: 'step' },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: s.color || COLORS[i % COLORS.length],
          width: s.width ?? 2,
          ...(s.dash && { dash: s.dash }),
          points: { show: true, size: 5 },
        })),
      ],
      ...(bands && { bands: bands.map(([upper, lower]) => ({ series: [upper, lower], fill: '#1f77b422' })) }),
    },
    [steps, ...series.map((s) => s.values)],
    target,
  );
}

const fmt = (x) => (x === null || x === undefined ? '' : Number(x).toFixed(3));

/**
 * One agentic run's steps (read from the store by the API): a plot per task of its reward mean with the
 * min–max band and the median over steps, the rollouts' status counts over steps, and a table of the latest
 * step's per-task distribution.
 */
async function agenticRunDetails(runId) {
  let view;
  try {
    view = await api(`/dashboard/api/agentic/${encodeURIComponent(runId)}/steps`);
  } catch (error) {
    if (error instanceof Unauthorized) throw error;
    return null;
  }
  const steps = view.steps.map((s) => s.step);
  const taskIds = [];
  for (const step of view.steps)
    for (const t of step.tasks) if (!taskIds.includes(t.taskId)) taskIds.push(t.taskId);
  const signature = JSON.stringify(view.steps);
  const known = state.agentic[runId];
  if (known && known.signature === signature && known.node) return known.node;
  for (const plot of Object.values(known?.plots || {})) plot.destroy();

  const id = `agentic-${runId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const plotsNode = el('div', { class: 'plots' });
  const node = el('div', { class: 'agentic-run', id, 'data-run-id': runId }, [
    el('h3', {}, [`${runId}: rewards per task over steps`]),
    plotsNode,
  ]);
  // Plots are drawn into a node in the page (uPlot measures its target).
  const holder = document.getElementById('agentic');
  holder.append(node);
  const plots = {};
  for (const taskId of taskIds) {
    const target = el('div', { class: 'plot', 'data-task-id': taskId });
    plotsNode.append(target);
    const of = (field) =>
      view.steps.map((s) => {
        const task = s.tasks.find((t) => t.taskId === taskId);
        return task ? task.rewards[field] : null;
      });
    plots[`task:${taskId}`] = stepPlot(
      target,
      `Task ${taskId}`,
      steps,
      [
        { label: 'max', values: of('max'), color: '#9bbbd8', width: 1 },
        { label: 'mean', values: of('mean'), color: '#1f77b4' },
        { label: 'median', values: of('median'), color: '#ff7f0e', dash: [4, 4] },
        { label: 'min', values: of('min'), color: '#9bbbd8', width: 1 },
      ],
      [[1, 4]],
    );
  }
  const statusTarget = el('div', { class: 'plot', 'data-plot': 'status' });
  plotsNode.append(statusTarget);
  plots.status = stepPlot(
    statusTarget,
    'Rollouts by status per step',
    steps,
    STATUSES.map((status, i) => ({
      label: status,
      values: view.steps.map((s) => s.byStatus[status]),
      color: ['#2ca02c', '#ff7f0e', '#d62728', '#7f7f7f'][i],
    })),
  );
  const latest = view.steps.at(-1);
  if (latest)
    node.append(
      el('h3', {}, [`Step ${latest.step}${latest.finished ? '' : ' (in progress)'}: per-task rewards`]),
      el('table', { class: 'agentic-tasks' }, [
        el(
          'tr',
          {},
          ['task', 'rollouts', 'scored', 'mean', 'min', 'q1', 'median', 'q3', 'max', 'statuses'].map((h) =>
            el('th', {}, [h]),
          ),
        ),
        ...latest.tasks.map((t) =>
          el('tr', { 'data-task-id': t.taskId }, [
            el('td', {}, [t.taskId]),
            el('td', {}, [t.rollouts]),
            el('td', {}, [t.rewards.count]),
            ...['mean', 'min', 'q1', 'median', 'q3', 'max'].map((f) => el('td', {}, [fmt(t.rewards[f])])),
            el('td', {}, [
              STATUSES.filter((k) => t.byStatus[k] > 0)
                .map((k) => `${k} ${t.byStatus[k]}`)
                .join(', '),
            ]),
          ]),
        ),
      ]),
    );
  state.agentic[runId] = { signature, steps: view.steps, plots, node };
  return node;
}

let polls = 0;
async function poll() {
  try {
    const changed = await refreshRuns();
    if (changed || polls % 3 === 0) await Promise.all([refreshSessions(), refreshAgentic()]);
    polls += 1;
    document.getElementById('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
    document.body.dataset.ready = 'true';
  } catch (error) {
    if (error instanceof Unauthorized) {
      showLogin(key() ? error.message : '');
      return;
    }
    document.getElementById('updated').textContent = `error: ${error.message}`;
  }
  setTimeout(poll, POLL_MS);
}

document.getElementById('login').addEventListener('submit', (event) => {
  event.preventDefault();
  localStorage.setItem(KEY_STORAGE, document.getElementById('key').value.trim());
  document.getElementById('login').hidden = true;
  document.getElementById('main').hidden = false;
  poll();
});
document.getElementById('forget').addEventListener('click', () => {
  localStorage.removeItem(KEY_STORAGE);
  location.reload();
});
document.getElementById('axis').addEventListener('change', (event) => {
  state.axis = event.target.value;
  for (const runState of Object.values(state.runs)) runState.signature = '';
  refreshRuns().catch(() => undefined);
});
poll();
