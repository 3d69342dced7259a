/**
 * The board's HTTP side, on node's http module. Read-only: GET and HEAD only, nothing written
 * anywhere. Routes:
 *
 *   /                         the page (src/board/page) and its assets, uPlot from node_modules
 *   /api/runs                 runs, behaviors, tags with their point counts, live progress, notes
 *   /api/run?run=R            configuration, checkpoints, lessons, ELO, timers, environments
 *   /api/scalars?run=R&behavior=B&tag=T&max=N   one tag's points (at most about N)
 *   /api/updates              Server-Sent Events: new points, and what else to fetch again
 *   /files/<path>             a file inside the results folder (a checkpoint's .onnx)
 *
 * The results folder is watched (chokidar, on inotify): a change is read within a few
 * milliseconds and pushed to every open page.
 */
import * as fs from 'fs';
import * as http from 'http';
import type { AddressInfo } from 'net';
import * as path from 'path';
import { watch, type FSWatcher } from 'chokidar';
import type { Logger } from '../common/logger';
import { isLoopbackAddress } from '../communicator/bind-address';
import { EVENT_FILE_PREFIX, ResultsFolder, type BoardUpdate } from './results-folder';
import { RefusedPath, fileInside } from './safe-path';

/** The page's own files; found from src/board and from dist/board alike. */
const PAGE_DIR = path.resolve(__dirname, '..', '..', 'src', 'board', 'page');
const UPLOT_DIR = path.dirname(require.resolve('uplot/dist/uPlot.iife.min.js'));

/** Every asset the page may load, by its URL: no other file outside the results folder is served. */
const ASSETS: Record<string, { file: string; type: string }> = {
  '/': { file: path.join(PAGE_DIR, 'index.html'), type: 'text/html; charset=utf-8' },
  '/board.js': { file: path.join(PAGE_DIR, 'board.js'), type: 'text/javascript; charset=utf-8' },
  '/board.css': { file: path.join(PAGE_DIR, 'board.css'), type: 'text/css; charset=utf-8' },
  '/uPlot.iife.min.js': { file: path.join(UPLOT_DIR, 'uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
  '/uPlot.min.css': { file: path.join(UPLOT_DIR, 'uPlot.min.css'), type: 'text/css; charset=utf-8' },
};

const FILES_PREFIX = '/files/';
/** Points per series sent by default: about two per pixel of a wide chart. */
const DEFAULT_MAX_POINTS = 4000;
/** Changes of one file arriving this close together are read once. */
const COALESCE_MS = 10;
/** A comment line keeps idle event streams open through proxies. */
const HEARTBEAT_MS = 15000;

export interface BoardOptions {
  resultsDir: string;
  port: number;
  host: string;
  logger: Logger;
  /** The flag that sets the port, named when the port is taken. */
  portFlag?: string;
}

export interface Board {
  /** http://host:port/ */
  readonly url: string;
  readonly folder: ResultsFolder;
  close(): Promise<void>;
}

/** Reads the results folder, starts watching it and serves the board; resolves once it listens. */
export async function startBoard(options: BoardOptions): Promise<Board> {
  const root = realFolder(options.resultsDir);
  const folder = new ResultsFolder(root);
  folder.load();
  const clients = new Set<http.ServerResponse>();
  const watcher = watchFolder(root, folder.eventFiles(), (files) => {
    const updates = files.flatMap((file) => folder.changed(file));
    for (const text of updateMessages(updates)) for (const client of clients) client.write(text);
  });
  const server = http.createServer((request, response) => {
    try {
      handle(request, response, folder, clients);
    } catch (error) {
      send(response, 500, 'text/plain; charset=utf-8', `The board failed on this request: ${(error as Error).message}`);
    }
  });
  const heartbeat = setInterval(() => {
    for (const client of clients) client.write(': alive\n\n');
  }, HEARTBEAT_MS);
  heartbeat.unref();
  try {
    await listen(server, options);
    await watcher.ready;
  } catch (error) {
    clearInterval(heartbeat);
    await watcher.close();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  if (!isLoopbackAddress(options.host)) {
    options.logger.warning(
      `--bind-address ${options.host}: the board is open to the network, without authentication or encryption: ` +
        'anyone who can reach this machine can read every run of the results folder (configurations, models, logs). ' +
        'Bind to localhost unless you must watch from another machine, and then only on a network you trust.',
    );
  }
  return {
    url: `http://${shownHost}:${port}/`,
    folder,
    close: async () => {
      clearInterval(heartbeat);
      for (const client of clients) client.end();
      await watcher.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
    },
  };
}

function realFolder(dir: string): string {
  let real: string;
  try {
    real = fs.realpathSync(dir);
  } catch {
    throw new Error(`The results folder ${path.resolve(dir)} does not exist: give the folder mlagents-learn writes to (results by default).`);
  }
  if (!fs.statSync(real).isDirectory()) throw new Error(`${path.resolve(dir)} is not a folder: give the results folder.`);
  return real;
}

function listen(server: http.Server, options: BoardOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      const flag = options.portFlag ?? '--port';
      if (error.code === 'EADDRINUSE') {
        reject(new Error(`Port ${options.port} on ${options.host} is taken (TensorBoard or another board?): choose another with ${flag}.`));
      } else {
        reject(new Error(`The board cannot listen on ${options.host}:${options.port}: ${error.message}`));
      }
    });
    server.listen(options.port, options.host, () => resolve());
  });
}

/**
 * Watches the results folder without following links, and calls back with the files changed,
 * coalesced. chokidar reports files and folders that come and go; each event file also gets an
 * inotify watch of its own (fs.watch), because chokidar drops a change that follows another
 * within a few milliseconds, and a summary must never wait for the next one to show.
 */
function watchFolder(root: string, eventFiles: readonly string[], onChange: (files: string[]) => void): FSWatcher & { ready: Promise<void> } {
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  const changed = (file: string) => {
    pending.add(file);
    timer ??= setTimeout(() => {
      timer = null;
      const files = [...pending];
      pending.clear();
      onChange(files);
    }, COALESCE_MS);
  };
  const fileWatchers = new Map<string, fs.FSWatcher>();
  const watchEventFile = (file: string) => {
    if (fileWatchers.has(file) || !path.basename(file).startsWith(EVENT_FILE_PREFIX)) return;
    try {
      fileWatchers.set(file, fs.watch(file, { persistent: false }, () => changed(file)).on('error', () => unwatchEventFile(file)));
    } catch {
      // Gone already: chokidar reports its removal.
    }
  };
  const unwatchEventFile = (file: string) => {
    fileWatchers.get(file)?.close();
    fileWatchers.delete(file);
  };
  eventFiles.forEach(watchEventFile);
  const watcher = watch(root, { ignoreInitial: true, followSymlinks: false, depth: 3 });
  watcher.on('add', (file) => {
    watchEventFile(file);
    changed(file);
  });
  watcher.on('unlink', (file) => {
    unwatchEventFile(file);
    changed(file);
  });
  for (const event of ['change', 'addDir', 'unlinkDir'] as const) watcher.on(event, changed);
  const ready = new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  const close = watcher.close.bind(watcher);
  return Object.assign(watcher, {
    ready,
    close: () => {
      for (const file of [...fileWatchers.keys()]) unwatchEventFile(file);
      if (timer !== null) clearTimeout(timer);
      return close();
    },
  });
}

/** The event-stream text of a batch of updates: each distinct one once. */
function updateMessages(updates: readonly BoardUpdate[]): string[] {
  const seen = new Set<string>();
  const messages: string[] = [];
  for (const update of updates) {
    const text = `data: ${JSON.stringify(update)}\n\n`;
    if (update.kind !== 'points' && seen.has(text)) continue;
    seen.add(text);
    messages.push(text);
  }
  return messages;
}

function handle(request: http.IncomingMessage, response: http.ServerResponse, folder: ResultsFolder, clients: Set<http.ServerResponse>): void {
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.setHeader('Allow', 'GET, HEAD');
    send(response, 405, 'text/plain; charset=utf-8', 'The board is read-only: only GET and HEAD are answered.');
    return;
  }
  // The raw path, not a parsed URL: URL parsing would resolve "..", hiding what was asked for.
  const rawUrl = request.url ?? '/';
  const rawPath = rawUrl.split('?')[0];
  const query = new URLSearchParams(rawUrl.includes('?') ? rawUrl.slice(rawUrl.indexOf('?') + 1) : '');
  if (rawPath.startsWith(FILES_PREFIX)) {
    serveResultsFile(response, folder.root, rawPath.slice(FILES_PREFIX.length));
    return;
  }
  const asset = ASSETS[rawPath];
  if (asset !== undefined) {
    send(response, 200, asset.type, fs.readFileSync(asset.file));
    return;
  }
  switch (rawPath) {
    case '/api/runs':
      sendJson(response, folder.summaries());
      return;
    case '/api/run': {
      const detail = folder.detail(query.get('run') ?? '');
      if (detail === null) send(response, 404, 'text/plain; charset=utf-8', `No run named ${query.get('run')} in the results folder.`);
      else sendJson(response, detail);
      return;
    }
    case '/api/scalars': {
      const max = Number(query.get('max') ?? DEFAULT_MAX_POINTS);
      const points = folder.points(query.get('run') ?? '', query.get('behavior') ?? '', query.get('tag') ?? '', max > 0 ? max : DEFAULT_MAX_POINTS);
      if (points === null) send(response, 404, 'text/plain; charset=utf-8', 'No such run, behavior or tag.');
      else sendJson(response, points);
      return;
    }
    case '/api/updates':
      response.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
      response.write(': connected\n\n');
      clients.add(response);
      request.on('close', () => clients.delete(response));
      return;
    default:
      send(response, 404, 'text/plain; charset=utf-8', `Nothing at ${rawPath}.`);
  }
}

function serveResultsFile(response: http.ServerResponse, root: string, encoded: string): void {
  let file: string;
  try {
    file = fileInside(root, encoded);
  } catch (error) {
    if (!(error instanceof RefusedPath)) throw error;
    send(response, error.status, 'text/plain; charset=utf-8', error.message);
    return;
  }
  const name = path.basename(file);
  response.writeHead(200, {
    'Content-Type': 'application/octet-stream',
    'Content-Length': fs.statSync(file).size,
    'Content-Disposition': `attachment; filename="${name.replace(/[^\w.-]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`,
  });
  if (response.req.method === 'HEAD') response.end();
  else fs.createReadStream(file).pipe(response);
}

function sendJson(response: http.ServerResponse, value: unknown): void {
  send(response, 200, 'application/json; charset=utf-8', JSON.stringify(value));
}

function send(response: http.ServerResponse, status: number, type: string, body: string | Buffer): void {
  response.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
  response.end(response.req.method === 'HEAD' ? undefined : body);
}
