/**
 * Event files read lazily: a behavior is listed from a glance at its files, answers its first
 * request with a sample over the whole run, and is read in the background, chunk by chunk. Small
 * chunks and no eager reading make small real files take the path large ones take.
 */
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { ResultsFolder, type BoardUpdate } from '../../src/board/results-folder';
import { startBoard } from '../../src/board/server';
import { EventFileWriter, encodeEvent } from '../../src/stats/event-file';
import { encodeRecord } from '../../src/stats/tfrecord';
import { launchChromium, screenshotOnFailure } from '../helpers/browser';
import { tempDir } from '../helpers/paths';

const TAGS = ['Environment/Cumulative Reward', 'Losses/Policy Loss', 'Policy/Entropy'];
const LAZY = { eagerBytes: 0, chunkBytes: 4096 };

/** A run with `points` summaries of TAGS (value of tag k at summary i: k * 1000 + i); returns its event file. */
function writeRun(results: string, run: string, points: number): string {
  let wallTime = 1700000000;
  const writer = new EventFileWriter(path.join(results, run, 'Agent'), () => wallTime);
  for (let i = 0; i < points; i++) {
    wallTime += 1;
    for (const [k, tag] of TAGS.entries()) writer.add({ step: (i + 1) * 100, summary: { value: [{ tag, simple_value: k * 1000 + i }] } });
  }
  writer.close();
  return writer.path;
}

function appendSummary(file: string, step: number, value: number): void {
  fs.appendFileSync(file, encodeRecord(encodeEvent({ wall_time: 1800000000 + step, step, summary: { value: [{ tag: TAGS[0], simple_value: value }] } })));
}

const range = (count: number, at: (i: number) => number) => Array.from({ length: count }, (_, i) => at(i));

async function getJson(url: string): Promise<any> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return response.json();
}

/** The board's Server-Sent Events, as they arrive. */
function listen(url: string): { updates: BoardUpdate[]; waitFor(match: (update: BoardUpdate) => boolean): Promise<void>; close(): void } {
  const updates: BoardUpdate[] = [];
  const waiters: Array<() => void> = [];
  let buffered = '';
  const request = http.get(new URL('/api/updates', url), (response) => {
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      buffered += chunk;
      const messages = buffered.split('\n\n');
      buffered = messages.pop()!;
      for (const message of messages) if (message.startsWith('data: ')) updates.push(JSON.parse(message.slice(6)));
      waiters.splice(0).forEach((wake) => wake());
    });
  });
  return {
    updates,
    waitFor: async (match) => {
      while (!updates.some(match)) await new Promise<void>((wake) => waiters.push(wake));
    },
    close: () => request.destroy(),
  };
}

describe('reading event files on demand', () => {
  it('lists a large run from a glance, serves a sample at once, then every point once read in the background', async () => {
    const results = tempDir('board-lazy');
    const points = 2000;
    writeRun(results, 'big', points);
    const board = await startBoard({ resultsDir: results, port: 0, host: '127.0.0.1', logger: memoryLogger(), reading: LAZY });
    const events = listen(board.url);
    try {
      // Listed, not read: the tags and the last step come from the files' first and last stretches.
      const [listed] = await getJson(`${board.url}api/runs`);
      expect(listed.behaviors).toEqual([
        expect.objectContaining({ name: 'Agent', read: 0, lastStep: points * 100, tags: [...TAGS].sort().map((tag) => ({ tag, points: null })) }),
      ]);

      const query = `run=big&behavior=Agent&tag=${encodeURIComponent(TAGS[1])}&max=100000`;
      const allSteps = range(points, (i) => (i + 1) * 100);
      const sample = await getJson(`${board.url}api/scalars?${query}`);
      expect(sample).toMatchObject({ sampled: true, total: null });
      // Spread over the whole run, first and last points included, each a real point.
      expect(sample.steps.length).toBeGreaterThan(10);
      expect(sample.steps.length).toBeLessThan(points);
      expect(sample.steps[0]).toBe(100);
      expect(sample.steps.at(-1)).toBe(points * 100);
      expect(sample.steps.every((step: number, i: number) => allSteps.includes(step) && (i === 0 || step > sample.steps[i - 1]))).toBe(true);
      expect(sample.values).toEqual(sample.steps.map((step: number) => 1000 + step / 100 - 1));

      await events.waitFor((update) => update.kind === 'reading' && update.read === 1);
      const progress = events.updates.filter((update) => update.kind === 'reading').map((update) => (update as { read: number }).read);
      expect(progress.some((read) => read > 0 && read < 1)).toBe(true);
      expect(progress).toEqual([...progress].sort((a, b) => a - b));

      const full = await getJson(`${board.url}api/scalars?${query}`);
      expect(full).toEqual({ steps: allSteps, wallTimes: range(points, (i) => 1700000001 + i), values: range(points, (i) => 1000 + i), total: points, sampled: false });
      const [read] = await getJson(`${board.url}api/runs`);
      expect(read.behaviors[0]).toMatchObject({ read: 1, tags: [...TAGS].sort().map((tag) => ({ tag, points })) });
    } finally {
      events.close();
      await board.close();
    }
  });

  it('keeps every point of a run appended while it is read, then follows the file', () => {
    const results = tempDir('board-lazy-append');
    const points = 500;
    const file = writeRun(results, 'growing', points);
    const pending: Array<() => void> = [];
    const updates: BoardUpdate[] = [];
    const folder = new ResultsFolder(fs.realpathSync(results), (batch) => updates.push(...batch), { ...LAZY, schedule: (next) => pending.push(next) });
    folder.load();

    expect(folder.points('growing', 'Agent', TAGS[0], 100000)).toMatchObject({ sampled: true });
    pending.shift()!();
    expect(updates).toEqual([{ kind: 'reading', run: 'growing', behavior: 'Agent', read: expect.any(Number) }]);
    expect((updates[0] as { read: number }).read).toBeLessThan(1);

    // Written while being read: no update of its own, the background read goes on to the new end.
    appendSummary(file, (points + 1) * 100, -1);
    expect(folder.changed(file)).toEqual([]);
    while (pending.length > 0) pending.shift()!();
    expect(updates.slice(-2)).toEqual([{ kind: 'reading', run: 'growing', behavior: 'Agent', read: 1 }, { kind: 'runs' }]);
    const read = folder.points('growing', 'Agent', TAGS[0], 100000)!;
    expect(read).toMatchObject({ sampled: false, total: points + 1 });
    expect(read.steps).toEqual(range(points + 1, (i) => (i + 1) * 100));
    expect(read.values).toEqual([...range(points, (i) => i), -1]);

    // Once read, the file is followed: an append is pushed as points from the series' old end.
    appendSummary(file, (points + 2) * 100, -2);
    expect(folder.changed(file)).toEqual([
      { kind: 'points', run: 'growing', behavior: 'Agent', tag: TAGS[0], from: points + 1, points: { steps: [(points + 2) * 100], wallTimes: [1800000000 + (points + 2) * 100], values: [-2] } },
    ]);
    expect(pending).toEqual([]);
  });

  it('stops reading in the background once stopped (the board closed)', () => {
    const results = tempDir('board-lazy-stop');
    writeRun(results, 'big', 500);
    const pending: Array<() => void> = [];
    const updates: BoardUpdate[] = [];
    const folder = new ResultsFolder(fs.realpathSync(results), (batch) => updates.push(...batch), { ...LAZY, schedule: (next) => pending.push(next) });
    folder.load();
    folder.points('big', 'Agent', TAGS[0], 100000);
    folder.stop();
    while (pending.length > 0) pending.shift()!();
    expect(updates).toEqual([]);
  });

  it('finds, listing the folder again, a run that came before the folder was watched', () => {
    const results = tempDir('board-lazy-refresh');
    writeRun(results, 'first', 10);
    const folder = new ResultsFolder(fs.realpathSync(results), () => undefined, LAZY);
    folder.load();
    writeRun(results, 'second', 10);
    expect(folder.summaries().map((run) => run.name)).toEqual(['first']);
    expect(folder.refresh()).toEqual([{ kind: 'runs' }]);
    expect(folder.summaries().map((run) => run.name)).toEqual(['first', 'second']);
    expect(folder.summaries()[1].behaviors[0]).toMatchObject({ name: 'Agent', lastStep: 1000, read: 0 });
  });

  it('draws a sample in the page first, then every point once read, then live points', async () => {
    const results = tempDir('board-lazy-page');
    const points = 3000;
    const file = writeRun(results, 'big', points);
    const board = await startBoard({ resultsDir: results, port: 0, host: '127.0.0.1', logger: memoryLogger(), reading: LAZY });
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.setViewport({ width: 1500, height: 1000 });
      await screenshotOnFailure(page, 'board-lazy', async () => {
        await page.goto(board.url);
        const tag = JSON.stringify(TAGS[0]);
        await page.waitForFunction('window.board.firstChartAt !== null');
        // Read whole in the background, the sample is replaced by every point (the page asks for at most 4000).
        await page.waitForFunction(`window.board.sampledSeries() === 0 && window.board.points('big', 'Agent', ${tag})?.total === ${points}`, { timeout: 60000 });
        expect(await page.evaluate(`window.board.points('big', 'Agent', ${tag}).steps`)).toEqual(range(points, (i) => (i + 1) * 100));
        expect(await page.$eval('[data-reading="big/Agent"]', (node) => node.textContent)).toBe('');
        appendSummary(file, (points + 1) * 100, 7);
        await page.waitForFunction(`window.board.points('big', 'Agent', ${tag}).total === ${points + 1}`);
        expect(await page.evaluate(`window.board.points('big', 'Agent', ${tag}).values.at(-1)`)).toBe(7);
      });
    } finally {
      await browser.close();
      await board.close();
    }
  }, 90000);
});
