/**
 * The board's server over real HTTP on loopback, on real files: what it serves from a results
 * folder written as ML-Agents' Python trainer writes it, damaged event files, and the safety
 * rules (nothing outside the folder, nothing written).
 */
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { startBoard, type Board } from '../../src/board/server';
import { freePort, tempDir } from '../helpers/paths';
import { UPSTREAM_BEHAVIOR, UPSTREAM_RUN, UPSTREAM_STEPS, UPSTREAM_TAGS, writeUpstreamRun } from './upstream-results';

/** One request with the path sent exactly as given (no client-side normalization of "..", "%2e"). */
function request(board: Board, method: string, rawPath: string): Promise<{ status: number; body: Buffer; headers: http.IncomingHttpHeaders }> {
  const url = new URL(board.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path: rawPath }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Every path under `dir` with its size and modification time: what "nothing written" compares. */
function tree(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .map((entry) => {
      const file = path.join(entry.parentPath, entry.name);
      const stat = fs.lstatSync(file);
      return `${path.relative(dir, file)} ${stat.size} ${stat.mtimeMs}`;
    })
    .sort();
}

describe('the board server', () => {
  let results: string;
  let outside: string;
  let board: Board;

  beforeAll(async () => {
    results = tempDir('board-results');
    outside = tempDir('board-outside');
    writeUpstreamRun(results);
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'not for the board');
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(results, UPSTREAM_RUN, 'link-out.txt'));
    fs.symlinkSync(outside, path.join(results, 'linked-run'));
    board = await startBoard({ resultsDir: results, port: 0, host: '127.0.0.1', logger: memoryLogger() });
  });

  afterAll(() => board.close());

  it("reads a results folder of ML-Agents' Python trainer: every upstream tag, the checkpoints, lesson, ELO and timers", async () => {
    const runs = JSON.parse((await request(board, 'GET', '/api/runs')).body.toString());
    // The folder linked from outside is not a run: links are never followed.
    expect(runs.map((run: { name: string }) => run.name)).toEqual([UPSTREAM_RUN]);
    const [behavior] = runs[0].behaviors;
    expect(behavior.name).toBe(UPSTREAM_BEHAVIOR);
    expect(behavior.tags).toEqual([...UPSTREAM_TAGS].sort().map((tag) => ({ tag, points: UPSTREAM_STEPS.length })));
    expect(behavior).toMatchObject({ lastStep: 30000, maxSteps: 500000 });

    const reward = JSON.parse((await request(board, 'GET', `/api/scalars?run=${UPSTREAM_RUN}&behavior=3DBall&tag=${encodeURIComponent('Environment/Cumulative Reward')}`)).body.toString());
    expect(reward).toEqual({ steps: UPSTREAM_STEPS, wallTimes: [1700000060, 1700000120, 1700000180], values: [0, 1, 2], total: 3 });

    const detail = JSON.parse((await request(board, 'GET', `/api/run?run=${UPSTREAM_RUN}`)).body.toString());
    expect(detail.checkpoints).toEqual([
      { behavior: '3DBall', steps: 30000, reward: 1.25, creationTime: 1700000180.5, file: 'ppo_upstream/3DBall/3DBall-30000.onnx', final: false },
      { behavior: '3DBall', steps: 30000, reward: 1.25, creationTime: 1700000180.5, file: 'ppo_upstream/3DBall.onnx', final: true },
    ]);
    expect(detail.lessons).toEqual([{ parameter: 'difficulty', lesson: 1, name: 'Hard' }]);
    expect(detail.elo).toEqual([{ behavior: '3DBall', elo: 1212.5 }]);
    expect(detail.timers.children['TrainerController.start_learning'].children.env_step.total).toBe(120);
    expect(detail.configuration).toContain('max_steps: 500000');
  });

  it('serves a checkpoint byte for byte, as a download', async () => {
    const response = await request(board, 'GET', '/files/ppo_upstream/3DBall/3DBall-30000.onnx');
    expect(response.status).toBe(200);
    expect(response.body).toEqual(fs.readFileSync(path.join(results, UPSTREAM_RUN, UPSTREAM_BEHAVIOR, '3DBall-30000.onnx')));
    expect(response.headers['content-disposition']).toContain('attachment; filename="3DBall-30000.onnx"');
  });

  it.each([
    ['..', '/files/../../etc/passwd', 403],
    ['.. inside', '/files/ppo_upstream/../../etc/passwd', 403],
    ['encoded ..', '/files/%2e%2e/%2E%2E/etc/passwd', 403],
    ['encoded slash', '/files/ppo_upstream%2F..%2F..%2Fetc%2Fpasswd', 403],
    ['backslash', '/files/ppo_upstream%5C..%5C..%5Cetc%5Cpasswd', 403],
    ['absolute', '/files//etc/passwd', 403],
    ['encoded absolute', '/files/%2Fetc%2Fpasswd', 403],
    ['drive letter', '/files/C:%5Cwindows', 403],
    ['NUL', '/files/ppo_upstream/configuration.yaml%00.onnx', 403],
    ['bad encoding', '/files/%E0%A4%A', 400],
    ['symlink to a file outside', '/files/ppo_upstream/link-out.txt', 403],
    ['symlink to a folder outside', '/files/linked-run/secret.txt', 403],
    ['a folder', '/files/ppo_upstream', 404],
  ])('refuses %s', async (_what, rawPath, status) => {
    const response = await request(board, 'GET', rawPath);
    expect(response.status).toBe(status);
    expect(response.body.toString()).not.toContain('not for the board');
  });

  it('answers only GET and HEAD, and no request changes a file', async () => {
    const before = tree(results);
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      for (const target of ['/api/runs', '/files/ppo_upstream/3DBall.onnx', '/files/ppo_upstream/new.txt']) {
        const response = await request(board, method, target);
        expect(response.status).toBe(405);
        expect(response.headers.allow).toBe('GET, HEAD');
      }
    }
    for (const target of ['/', '/board.js', '/uPlot.iife.min.js', '/api/runs', `/api/run?run=${UPSTREAM_RUN}`, '/files/ppo_upstream/3DBall.onnx']) {
      expect((await request(board, 'HEAD', target)).status).toBe(200);
      expect((await request(board, 'GET', target)).status).toBe(200);
    }
    expect(tree(results)).toEqual(before);
  });
});

describe('damaged event files', () => {
  it('skips a corrupt record and a cut one with notes naming the file and offset, and keeps the rest', async () => {
    const results = tempDir('board-damaged');
    writeUpstreamRun(results);
    const behaviorDir = path.join(results, UPSTREAM_RUN, UPSTREAM_BEHAVIOR);
    const file = path.join(behaviorDir, fs.readdirSync(behaviorDir).find((name) => name.startsWith('events.out'))!);
    const bytes = fs.readFileSync(file);
    // The first record is the file_version event; flip a byte in the data of the second.
    const secondRecord = 12 + Number(bytes.readBigUInt64LE(0)) + 4;
    bytes[secondRecord + 14] ^= 0xff;
    fs.writeFileSync(file, Buffer.concat([bytes, bytes.subarray(secondRecord, secondRecord + 20)]));

    const board = await startBoard({ resultsDir: results, port: 0, host: '127.0.0.1', logger: memoryLogger() });
    try {
      const [run] = JSON.parse((await request(board, 'GET', '/api/runs')).body.toString());
      expect(run.notes).toEqual([
        expect.stringMatching(new RegExp(`^${file}: \\d+ bytes from byte offset ${secondRecord} skipped: the CRC of the data does not match`)),
        `${file}: ends inside a record at byte offset ${bytes.length} (cut, or being written)`,
      ]);
      // The skipped record held one tag's first point (the hyperparameters text holds no scalar).
      const counts = run.behaviors[0].tags.map((t: { points: number }) => t.points);
      expect(counts.reduce((a: number, b: number) => a + b, 0)).toBe(UPSTREAM_TAGS.length * UPSTREAM_STEPS.length - 1);
    } finally {
      await board.close();
    }
  });
});

describe('ports and addresses', () => {
  it('names the flag when the port is taken, and warns when bound beyond loopback', async () => {
    const results = tempDir('board-port');
    const port = await freePort();
    const first = await startBoard({ resultsDir: results, port, host: '127.0.0.1', logger: memoryLogger() });
    try {
      await expect(startBoard({ resultsDir: results, port, host: '127.0.0.1', logger: memoryLogger() })).rejects.toThrow(
        `Port ${port} on 127.0.0.1 is taken (TensorBoard or another board?): choose another with --port.`,
      );
    } finally {
      await first.close();
    }
    const logger = memoryLogger();
    const open = await startBoard({ resultsDir: results, port: 0, host: '0.0.0.0', logger });
    await open.close();
    expect(logger.lines).toEqual([expect.objectContaining({ level: 'warning', message: expect.stringContaining('--bind-address 0.0.0.0: the board is open to the network') })]);
    await expect(startBoard({ resultsDir: path.join(results, 'missing'), port: 0, host: '127.0.0.1', logger })).rejects.toThrow('does not exist');
  });
});
