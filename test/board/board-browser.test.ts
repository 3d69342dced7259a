/**
 * The board in headless Chromium, on results written by real short runs of mlagents-learn (the
 * built-in SimpleGoal over gRPC) and by ML-Agents' Python trainer (the fixture): what the page
 * shows, what it downloads, and points arriving live while a run trains.
 */
import * as fs from 'fs';
import * as path from 'path';
import type { Browser, Page } from 'puppeteer-core';
import { learn } from '../../src/cli/mlagents-learn';
import { memoryLogger } from '../../src/common/logger';
import { startBoard, type Board } from '../../src/board/server';
import { listEventFiles, readEventFile } from '../../src/stats/event-file';
import { launchChromium, screenshotOnFailure } from '../helpers/browser';
import { tempDir } from '../helpers/paths';
import { simpleGoalArgs } from '../cli/learn-helpers';
import { UPSTREAM_RUN, UPSTREAM_TAGS, writeUpstreamRun } from './upstream-results';

const REWARD = 'Environment/Cumulative Reward';

/** A short PPO run of SimpleGoal: a summary every 100 steps, a checkpoint every 200. */
function writeConfig(cwd: string, maxSteps: number): void {
  fs.writeFileSync(
    path.join(cwd, 'config.yaml'),
    [
      'behaviors:',
      '  1D:',
      '    trainer_type: ppo',
      '    hyperparameters: {batch_size: 16, buffer_size: 64, learning_rate: 5.0e-3}',
      '    network_settings: {num_layers: 1, hidden_units: 16}',
      '    summary_freq: 100',
      '    checkpoint_interval: 200',
      `    max_steps: ${maxSteps}`,
      '',
    ].join('\n'),
  );
}

/** The steps of `tag` in every event file of a behavior, read with the project's reader. */
function stepsInFiles(behaviorDir: string, tag: string): number[] {
  return listEventFiles(behaviorDir)
    .flatMap(readEventFile)
    .filter((event) => event.summary?.value.some((v) => v.tag === tag && v.simple_value !== undefined))
    .map((event) => event.step);
}

/** The steps of a series the page holds (window.board, the page's data); expressions, as the tests compile without DOM types. */
const pointsExpression = (run: string, behavior: string, tag: string) => `window.board.points(${JSON.stringify(run)}, ${JSON.stringify(behavior)}, ${JSON.stringify(tag)})?.steps`;
const pagePoints = (page: Page, run: string, tag: string, behavior = '1D') => page.evaluate(pointsExpression(run, behavior, tag)) as Promise<number[] | undefined>;

describe('the board in a browser', () => {
  let cwd: string;
  let board: Board;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    cwd = tempDir('board-browser');
    writeConfig(cwd, 400);
    await learn(await simpleGoalArgs('first'), { cwd, logger: memoryLogger() });
    writeUpstreamRun(path.join(cwd, 'results'));
    board = await startBoard({ resultsDir: path.join(cwd, 'results'), port: 0, host: '127.0.0.1', logger: memoryLogger() });
    browser = await launchChromium();
    page = await browser.newPage();
    await page.setViewport({ width: 1500, height: 1000 });
    await page.goto(board.url);
    await page.waitForFunction('window.board.firstChartAt !== null');
  }, 120000);

  afterAll(async () => {
    await browser?.close();
    await board?.close();
  });

  it("shows the runs, each tag's chart with every point, the configuration and the checkpoints", async () => {
    await screenshotOnFailure(page, 'board-runs', async () => {
      const runNames = await page.$$eval('nav .run', (nodes) => nodes.map((node) => node.getAttribute('data-run')));
      expect(runNames).toEqual(['first', UPSTREAM_RUN]);
      const tags = await page.$$eval('.chart', (nodes) => nodes.map((node) => node.getAttribute('data-tag')));
      for (const tag of [REWARD, 'Environment/Episode Length', 'Losses/Policy Loss', 'Policy/Entropy', 'Policy/Learning Rate', ...UPSTREAM_TAGS]) {
        expect(tags).toContain(tag);
      }
      const expected = stepsInFiles(path.join(cwd, 'results', 'first', '1D'), REWARD);
      expect(expected.length).toBeGreaterThan(1);
      expect(await pagePoints(page, 'first', REWARD)).toEqual(expected);
      const drawn = (await page.evaluate(`window.board.drawn(${JSON.stringify(REWARD)})`)) as Record<string, number>;
      expect(drawn['first/1D']).toBe(expected.length);

      expect(await page.$eval('#configuration', (node) => node.textContent)).toContain('max_steps: 400');
      const rows = await page.$$eval('#checkpoints tr', (nodes) => nodes.slice(1).map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent)));
      const status = JSON.parse(fs.readFileSync(path.join(cwd, 'results', 'first', 'run_logs', 'training_status.json'), 'utf8'));
      const saved = [...status['1D'].checkpoints, status['1D'].final_checkpoint].map((c: { steps: number; file_path: string }) => [String(c.steps), path.basename(c.file_path)]);
      expect(rows.map((cells) => [cells[1], cells[4]])).toEqual(saved);
      expect(await page.$eval('#timers', (node) => node.textContent)).toContain('env_step');
      expect(await page.$eval('#environments', (node) => node.textContent)).toContain('ended');
    });
  });

  it('downloads a checkpoint .onnx byte for byte', async () => {
    await screenshotOnFailure(page, 'board-download', async () => {
      const downloads = tempDir('board-downloads');
      const session = await page.createCDPSession();
      await session.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads, eventsEnabled: true });
      const finished = new Promise<void>((resolve) =>
        session.on('Browser.downloadProgress', (event) => {
          if (event.state === 'completed') resolve();
        }),
      );
      const name = await page.$eval('#checkpoints tr:nth-child(2) a', (link) => link.textContent!);
      await page.click('#checkpoints tr:nth-child(2) a');
      await finished;
      expect(fs.readFileSync(path.join(downloads, name))).toEqual(fs.readFileSync(path.join(cwd, 'results', 'first', '1D', name)));
    });
  });

  it("shows ML-Agents' own results: upstream tags, its checkpoints, lesson, ELO and timers", async () => {
    await screenshotOnFailure(page, 'board-upstream', async () => {
      await page.click(`nav .run[data-run="${UPSTREAM_RUN}"] button.details`);
      await page.waitForFunction(`document.querySelector('#details h2')?.textContent === 'Run ${UPSTREAM_RUN}'`);
      expect(await page.$eval('#lessons', (node) => node.textContent)).toBe('difficultylesson 1 (Hard)');
      const links = await page.$$eval('#checkpoints a', (nodes) => nodes.map((node) => node.getAttribute('href')));
      expect(links).toEqual(['/files/ppo_upstream/3DBall/3DBall-30000.onnx', '/files/ppo_upstream/3DBall.onnx']);
      expect(await page.$eval('#details', (node) => node.textContent)).toContain('1212.5');
      expect(await page.$eval('#timers', (node) => node.textContent)).toContain('TrainerController.start_learning');
      expect(await pagePoints(page, UPSTREAM_RUN, 'Self-play/ELO', '3DBall')).toEqual([10000, 20000, 30000]);
    });
  });

  it('adds the points of a run that trains while the page is open, without a reload', async () => {
    await screenshotOnFailure(page, 'board-live', async () => {
      await page.evaluate('window.sameDocument = true');
      writeConfig(cwd, 1200);
      const training = learn(await simpleGoalArgs('second'), { cwd, logger: memoryLogger() });
      // The new run appears, is overlaid, and its chart gains points as summaries are written.
      await page.waitForFunction(`document.querySelector('nav .run[data-run="second"] input')?.hasAttribute('checked')`);
      await page.waitForFunction(`(${pointsExpression('second', '1D', 'Losses/Policy Loss')}?.length ?? 0) >= 2`, { timeout: 120000 });
      expect(await page.$('nav .run[data-run="second"] .badge')).not.toBeNull();
      await training;
      const expected = stepsInFiles(path.join(cwd, 'results', 'second', '1D'), 'Losses/Policy Loss');
      await page.waitForFunction(`(${pointsExpression('second', '1D', 'Losses/Policy Loss')}?.length ?? 0) >= ${expected.length}`);
      expect(await pagePoints(page, 'second', 'Losses/Policy Loss')).toEqual(expected);
      expect(await page.evaluate('window.sameDocument')).toBe(true);
    });
  }, 180000);
});
