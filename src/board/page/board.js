// The board's page: runs on the left, a chart per scalar tag in the middle (the selected runs
// overlaid), the focused run's configuration, checkpoints, lessons, timers and environments on
// the right. Data comes from the server's /api routes; new points arrive over Server-Sent Events.
'use strict';

/** Runs overlaid at first: all of them when few, else the first ones (the others one click away). */
const INITIAL_SELECTION = 5;
const COLORS = ['#1565c0', '#c62828', '#2e7d32', '#6a1b9a', '#ef6c00', '#00838f', '#4e342e', '#ad1457', '#558b2f', '#283593'];

const state = {
  runs: [],
  selected: new Set(),
  known: new Set(),
  focused: null,
  xAxis: 'step',
  smoothing: 0.6,
  tagFilter: '',
  /** "run\0behavior\0tag" -> { steps, wallTimes, values, total } */
  series: new Map(),
  /** tag -> { element, plot, key } */
  charts: new Map(),
  redrawQueued: new Set(),
};

/** What tests and the benchmark read from the page. */
window.board = {
  /** Milliseconds from the page's navigation to its first chart drawn. */
  firstChartAt: null,
  /** When points pushed by the server were last drawn, in milliseconds since the epoch (the live delay). */
  pushedPointsDrawnAt: null,
  /** The points the page holds for one series, or null when it holds none. */
  points(run, behavior, tag) {
    const series = state.series.get(seriesKey(run, behavior, tag));
    return series === undefined ? null : { steps: series.steps.slice(), values: series.values.slice(), total: series.total };
  },
  chartTags: () => [...state.charts.keys()],
  /** How many points each chart draws, per series label. */
  drawn(tag) {
    const chart = state.charts.get(tag);
    return chart === undefined ? null : chart.drawn;
  },
};

const seriesKey = (run, behavior, tag) => `${run}\u0000${behavior}\u0000${tag}`;

async function getJson(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
  return response.json();
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value === true ? '' : value);
  }
  return fill(node, children, false);
}

/** Puts `children` (nested arrays, null for nothing) in `node`, after or instead of what it holds. */
function fill(node, children, replace = true) {
  const nodes = children.flat(Infinity).filter((child) => child !== null && child !== undefined);
  if (replace) node.replaceChildren(...nodes);
  else node.append(...nodes);
  return node;
}

function formatDuration(seconds) {
  if (seconds === null || !Number.isFinite(seconds)) return '–';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h} h ${m} min` : m > 0 ? `${m} min ${s % 60} s` : `${s} s`;
}

const formatNumber = (value, digits = 4) => (value === null || value === undefined ? '–' : Number(value).toPrecision(digits));

// ---- runs ----------------------------------------------------------------------------------

async function loadRuns() {
  state.runs = await getJson('/api/runs');
  // Runs seen for the first time (at start, or started while the page is open) are overlaid while few are.
  for (const run of state.runs) {
    if (state.known.has(run.name)) continue;
    state.known.add(run.name);
    if (state.selected.size < INITIAL_SELECTION) state.selected.add(run.name);
  }
  for (const name of [...state.selected]) if (!state.runs.some((run) => run.name === name)) state.selected.delete(name);
  if (state.focused === null || !state.runs.some((run) => run.name === state.focused)) state.focused = state.runs[0]?.name ?? null;
  renderRuns();
  await renderCharts();
  await loadDetails();
}

function renderRuns() {
  const nav = document.getElementById('runs');
  fill(nav, [
    element('h2', {}, `Runs (${state.runs.length})`),
    ...state.runs.map((run, index) =>
      element(
        'div',
        { class: 'run', 'data-run': run.name },
        element(
          'label',
          { style: `color: ${COLORS[index % COLORS.length]}` },
          element('input', {
            type: 'checkbox',
            checked: state.selected.has(run.name),
            onchange: (event) => {
              if (event.target.checked) state.selected.add(run.name);
              else state.selected.delete(run.name);
              renderCharts();
            },
          }),
          ` ${run.name}`,
        ),
        run.live ? element('span', { class: 'badge' }, 'live') : null,
        element('button', { class: 'details', onclick: () => focus(run.name) }, 'details'),
        run.behaviors.map((behavior) => [
          element('div', { class: 'behavior' }, `${behavior.name}: step ${behavior.lastStep}${behavior.maxSteps ? ` of ${behavior.maxSteps}` : ''}`),
          run.live
            ? element(
                'div',
                { class: 'progress', 'data-progress': `${run.name}/${behavior.name}` },
                `${behavior.stepsPerSecond === null ? '–' : behavior.stepsPerSecond.toFixed(1)} steps/s, ${formatDuration(behavior.secondsLeft)} left`,
              )
            : null,
        ]),
        run.notes.map((note) => element('div', { class: 'note' }, note)),
      ),
    ),
  ]);
}

function focus(runName) {
  state.focused = runName;
  loadDetails();
}

// ---- charts --------------------------------------------------------------------------------

/** Every (run, behavior) of the selected runs that has this tag, with its run's color. */
function seriesOfTag(tag) {
  const found = [];
  state.runs.forEach((run, index) => {
    if (!state.selected.has(run.name)) return;
    for (const behavior of run.behaviors) {
      if (behavior.tags.some((t) => t.tag === tag)) found.push({ run: run.name, behavior: behavior.name, color: COLORS[index % COLORS.length] });
    }
  });
  return found;
}

function selectedTags() {
  const tags = new Set();
  for (const run of state.runs) {
    if (!state.selected.has(run.name)) continue;
    for (const behavior of run.behaviors) for (const { tag } of behavior.tags) tags.add(tag);
  }
  const filter = state.tagFilter.toLowerCase();
  return [...tags].filter((tag) => tag.toLowerCase().includes(filter)).sort(tagOrder);
}

/** Environment first (rewards), then Policy, then Losses, then the rest, as one reads a run. */
function tagOrder(a, b) {
  const rank = (tag) => ['Environment/', 'Policy/', 'Losses/'].findIndex((prefix) => tag.startsWith(prefix)) >>> 0;
  return rank(a) - rank(b) || a.localeCompare(b);
}

async function renderCharts() {
  const tags = selectedTags();
  const container = document.getElementById('charts');
  for (const [tag, chart] of state.charts) {
    if (!tags.includes(tag)) {
      chart.plot?.destroy();
      chart.element.remove();
      state.charts.delete(tag);
    }
  }
  for (const tag of tags) {
    if (!state.charts.has(tag)) {
      const element_ = element('div', { class: 'chart', 'data-tag': tag }, element('h3', {}, tag), element('div', { class: 'sampled' }), element('div', { class: 'plot' }));
      state.charts.set(tag, { element: element_, plot: null, key: '', drawn: {} });
    }
    container.append(state.charts.get(tag).element);
  }
  // Each chart is drawn as soon as its own points arrived.
  await Promise.all(
    tags.map(async (tag) => {
      await Promise.all(seriesOfTag(tag).map(({ run, behavior }) => loadSeries(run, behavior, tag)));
      drawChart(tag);
    }),
  );
}

async function loadSeries(run, behavior, tag) {
  const key = seriesKey(run, behavior, tag);
  if (state.series.has(key)) return;
  const params = new URLSearchParams({ run, behavior, tag });
  const points = await getJson(`/api/scalars?${params}`);
  if (!state.series.has(key)) state.series.set(key, points);
}

/** TensorBoard's smoothing: an exponential moving average, debiased so that the first points are not pulled to 0. */
function smooth(values, weight) {
  const smoothed = new Array(values.length);
  let last = 0;
  let count = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (!Number.isFinite(value)) {
      smoothed[i] = value;
      continue;
    }
    last = last * weight + (1 - weight) * value;
    count++;
    smoothed[i] = weight === 0 ? value : last / (1 - Math.pow(weight, count));
  }
  return smoothed;
}

function xValues(points) {
  if (state.xAxis === 'step') return points.steps;
  if (state.xAxis === 'wall') return points.wallTimes;
  const start = points.wallTimes[0] ?? 0;
  return points.wallTimes.map((t) => (t - start) / 3600);
}

/** Points sharing an x are kept once (the last), as uPlot's join needs increasing x. */
function table(xs, ys) {
  const x = [];
  const y = [];
  for (let i = 0; i < xs.length; i++) {
    if (x.length > 0 && xs[i] <= x[x.length - 1]) {
      if (xs[i] === x[x.length - 1]) y[y.length - 1] = ys[i];
      continue;
    }
    x.push(xs[i]);
    y.push(ys[i]);
  }
  return [x, y];
}

function drawChart(tag) {
  const chart = state.charts.get(tag);
  if (chart === undefined) return;
  const lines = seriesOfTag(tag).filter(({ run, behavior }) => state.series.has(seriesKey(run, behavior, tag)));
  const tables = [];
  const uplotSeries = [{}];
  const sampled = [];
  chart.drawn = {};
  for (const { run, behavior, color } of lines) {
    const points = state.series.get(seriesKey(run, behavior, tag));
    const xs = xValues(points);
    const label = `${run}/${behavior}`;
    tables.push(table(xs, points.values));
    tables.push(table(xs, smooth(points.values, state.smoothing)));
    uplotSeries.push({ label: `${label} (raw)`, stroke: `${color}40`, width: 1, spanGaps: true });
    uplotSeries.push({ label, stroke: color, width: 2, spanGaps: true });
    chart.drawn[label] = points.values.length;
    if (points.total > points.values.length) sampled.push(`${label}: ${points.values.length} of ${points.total} points (shape kept)`);
  }
  chart.element.querySelector('.sampled').textContent = sampled.join('; ');
  if (tables.length === 0) return;
  const data = tables.length === 1 ? tables[0] : uPlot.join(tables);
  const key = `${state.xAxis}|${uplotSeries.map((s) => s.label).join('|')}`;
  const host = chart.element.querySelector('.plot');
  if (chart.plot !== null && chart.key === key) {
    chart.plot.setData(data);
  } else {
    chart.plot?.destroy();
    chart.plot = new uPlot(
      {
        width: Math.max(300, host.clientWidth || 460),
        height: 220,
        scales: { x: { time: state.xAxis === 'wall' } },
        series: uplotSeries,
        axes: [{ label: { step: 'step', relative: 'hours', wall: '' }[state.xAxis] }, {}],
        legend: { show: lines.length > 1 },
      },
      data,
      host,
    );
    chart.key = key;
  }
  if (window.board.firstChartAt === null) window.board.firstChartAt = performance.now();
}

/** Redraws each chart at most once a frame, however many updates arrive. */
function queueRedraw(tag) {
  if (state.redrawQueued.size === 0) {
    requestAnimationFrame(() => {
      const tags = [...state.redrawQueued];
      state.redrawQueued.clear();
      for (const t of tags) drawChart(t);
      window.board.pushedPointsDrawnAt = Date.now();
    });
  }
  state.redrawQueued.add(tag);
}

function redrawAll() {
  for (const tag of state.charts.keys()) drawChart(tag);
}

// ---- the focused run -----------------------------------------------------------------------

async function loadDetails() {
  const aside = document.getElementById('details');
  if (state.focused === null) {
    fill(aside, [element('p', {}, 'No run in this results folder yet.')]);
    return;
  }
  const detail = await getJson(`/api/run?${new URLSearchParams({ run: state.focused })}`);
  fill(aside, [
    element('h2', {}, `Run ${detail.name}`),
    detail.notes.map((note) => element('div', { class: 'note' }, note)),
    environmentsSection(detail.environments),
    checkpointsSection(detail.checkpoints),
    detail.lessons.length === 0
      ? null
      : [
          element('h2', {}, 'Lessons'),
          element('table', { id: 'lessons' }, detail.lessons.map((l) => element('tr', {}, element('td', {}, l.parameter), element('td', {}, `lesson ${l.lesson}${l.name ? ` (${l.name})` : ''}`)))),
        ],
    detail.elo.length === 0 ? null : [element('h2', {}, 'ELO'), element('table', {}, detail.elo.map((e) => element('tr', {}, element('td', {}, e.behavior), element('td', { class: 'number' }, e.elo.toFixed(1)))))],
    timersSection(detail.timers),
    element('h2', {}, 'Configuration'),
    element('pre', { id: 'configuration' }, detail.configuration ?? 'configuration.yaml is missing.'),
  ]);
}

function environmentsSection(environments) {
  if (environments === null) return null;
  return [
    element('h2', {}, `Environments: ${environments.state}`),
    element(
      'table',
      { id: 'environments' },
      element('tr', {}, element('th', {}, 'worker'), element('th', {}, 'state'), element('th', { class: 'number' }, 'restarts')),
      environments.environments.map((env) =>
        element('tr', {}, element('td', {}, String(env.worker)), element('td', {}, environments.state === 'training' ? 'connected' : environments.state), element('td', { class: 'number' }, String(env.restarts))),
      ),
    ),
  ];
}

function checkpointsSection(checkpoints) {
  return [
    element('h2', {}, 'Checkpoints'),
    checkpoints.length === 0
      ? element('p', {}, 'None saved yet.')
      : element(
          'table',
          { id: 'checkpoints' },
          element('tr', {}, ['behavior', 'step', 'reward', 'saved', 'model'].map((h) => element('th', {}, h))),
          checkpoints.map((c) =>
            element(
              'tr',
              {},
              element('td', {}, c.final ? `${c.behavior} (final)` : c.behavior),
              element('td', { class: 'number' }, String(c.steps)),
              element('td', { class: 'number' }, formatNumber(c.reward)),
              element('td', {}, new Date(c.creationTime * 1000).toLocaleString()),
              element('td', {}, c.file === null ? 'file gone' : element('a', { href: `/files/${c.file.split('/').map(encodeURIComponent).join('/')}`, download: '' }, c.file.split('/').pop())),
            ),
          ),
        ),
  ];
}

/** The timer tree as rows: a block, its total, its share of the run, count and own time. */
function timersSection(timers) {
  if (timers === null) return null;
  const rows = [];
  const walk = (name, node, depth) => {
    rows.push(
      element(
        'tr',
        {},
        element('td', { style: `padding-left: ${4 + depth * 12}px` }, name),
        element('td', { class: 'number' }, node.total.toFixed(2)),
        element('td', { class: 'number' }, timers.total > 0 ? `${((100 * node.total) / timers.total).toFixed(1)}%` : '–'),
        element('td', { class: 'number' }, String(node.count)),
        element('td', { class: 'number' }, node.self.toFixed(2)),
      ),
    );
    const children = Object.entries(node.children ?? {}).sort((a, b) => b[1].total - a[1].total);
    for (const [childName, child] of children) walk(childName, child, depth + 1);
  };
  walk('run', timers, 0);
  return [
    element('h2', {}, 'Where the time goes (timers.json)'),
    element('table', { id: 'timers' }, element('tr', {}, ['block', 'total s', 'share', 'count', 'self s'].map((h) => element('th', { class: h === 'block' ? '' : 'number' }, h))), rows),
  ];
}

// ---- live ----------------------------------------------------------------------------------

function listen() {
  const connection = document.getElementById('connection');
  const source = new EventSource('/api/updates');
  source.onopen = () => {
    connection.textContent = 'watching the results folder';
    connection.classList.add('live');
  };
  source.onerror = () => {
    connection.textContent = 'disconnected: retrying…';
    connection.classList.remove('live');
  };
  source.onmessage = (message) => {
    const update = JSON.parse(message.data);
    if (update.kind === 'points') {
      appendPoints(update);
      // The live progress (steps/s, time left) moves with the points.
      reloadRunsSoon(500);
    } else if (update.kind === 'runs') {
      reloadRunsSoon(50);
    } else if (update.kind === 'run' && update.run === state.focused) {
      loadDetails();
    }
  };
}

function appendPoints(update) {
  const series = state.series.get(seriesKey(update.run, update.behavior, update.tag));
  if (series === undefined) return;
  series.steps.push(...update.points.steps);
  series.wallTimes.push(...update.points.wallTimes);
  series.values.push(...update.points.values);
  series.total += update.points.values.length;
  queueRedraw(update.tag);
}

let runsReload = null;
function reloadRunsSoon(delayMs) {
  runsReload ??= setTimeout(() => {
    runsReload = null;
    loadRuns();
  }, delayMs);
}

// ---- controls ------------------------------------------------------------------------------

document.getElementById('x-axis').addEventListener('change', (event) => {
  state.xAxis = event.target.value;
  redrawAll();
});
document.getElementById('smoothing').addEventListener('input', (event) => {
  state.smoothing = Number(event.target.value);
  document.getElementById('smoothing-value').textContent = state.smoothing.toFixed(2);
  redrawAll();
});
document.getElementById('tag-filter').addEventListener('input', (event) => {
  state.tagFilter = event.target.value;
  renderCharts();
});

listen();
loadRuns();
