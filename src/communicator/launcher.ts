/**
 * Finding and starting a built Unity player (an "environment executable"), and ending it again.
 *
 * The command line we hand the player is the one ML-Agents' Python `UnityEnvironment` builds, in
 * the same order, so a player behaves exactly as it does under `mlagents-learn`:
 *
 *     <exe> [-nographics -batchmode] --mlagents-port <port> [-logFile <path>] [extra args...]
 *
 * The player is started as the leader of its own process group, so that closing it also ends
 * whatever it started itself (crash handlers, helper processes, a shell wrapper's children).
 */
import { spawn, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

/** The flag a Unity player reads its trainer port from. */
export const PORT_COMMAND_LINE_ARG = '--mlagents-port';

/** Extensions a Unity build may carry; a path given with one of them is matched without it too. */
const BUILD_EXTENSIONS = ['.x86_64', '.x86', '.app', '.exe'];

/** How much of the player's combined stdout/stderr we keep for error messages. */
const OUTPUT_TAIL_BYTES = 8 * 1024;

/** Set this to 1 to copy the player's stdout/stderr through to ours. */
export const SHOW_OUTPUT_ENV_VAR = 'MLAGENTS_SHOW_ENV_OUTPUT';

function isFile(p: string): boolean {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function stripBuildExtension(p: string): string {
  for (const ext of BUILD_EXTENSIONS) {
    if (p.toLowerCase().endsWith(ext) && p.length > ext.length) return p.slice(0, -ext.length);
  }
  return p;
}

/**
 * The files tried for a build named `base` (its extension already removed) on `platform`, in the
 * order ML-Agents tries them. On macOS the second form stands for "any file in Contents/MacOS".
 */
function platformCandidates(base: string, platform: NodeJS.Platform): string[] {
  if (platform === 'darwin') {
    const macosDir = path.join(`${base}.app`, 'Contents', 'MacOS');
    return [path.join(macosDir, path.basename(base)), path.join(macosDir, '*')];
  }
  if (platform === 'win32') return [`${base}.exe`];
  return [`${base}.x86_64`, `${base}.x86`];
}

/**
 * Turns the `--env` value into the file to run.
 *
 * Order: the path itself when it names an existing file; otherwise, as ML-Agents does on Linux,
 * the name with any build extension (.x86_64, .x86, .app, .exe) removed and then `.x86_64`, then
 * `.x86` appended (macOS: `NAME.app/Contents/MacOS/NAME`, then any file in that folder; Windows:
 * `NAME.exe`). Relative paths are taken from the current directory. Returns an absolute path.
 */
export function resolveExecutablePath(
  envPath: string,
  platform: NodeJS.Platform = process.platform,
): string {
  const given = envPath.trim();
  if (given === '') {
    throw new Error('No environment executable was given: pass the path to a Unity build with --env.');
  }
  const tried: string[] = [];

  tried.push(given);
  if (isFile(given)) return path.resolve(given);

  const base = stripBuildExtension(given);
  for (const candidate of platformCandidates(base, platform)) {
    if (!tried.includes(candidate)) tried.push(candidate);
    if (candidate.endsWith(`${path.sep}*`)) {
      const dir = path.dirname(candidate);
      if (!isDirectory(dir)) continue;
      const first = fs
        .readdirSync(dir)
        .sort()
        .map((name) => path.join(dir, name))
        .find(isFile);
      if (first !== undefined) return path.resolve(first);
      continue;
    }
    if (isFile(candidate)) return path.resolve(candidate);
  }

  const hint = isDirectory(given)
    ? ` "${given}" is a folder: point --env at the player file inside it, not at the folder.`
    : '';
  throw new Error(
    `Could not find the environment executable "${envPath}". Tried: ${tried
      .map((t) => `"${t}"`)
      .join(', ')} (relative to ${process.cwd()}).${hint} Check the --env flag: it must name a ` +
      'Unity player built for this platform, with or without its extension ' +
      '(for example --env=Builds/MyGame or --env=Builds/MyGame.x86_64).',
  );
}

/** Options for {@link buildExecutableArgs}. */
export interface ExecutableArgsOptions {
  port: number;
  noGraphics: boolean;
  logFile?: string;
  extraArgs?: string[];
}

/**
 * The player's command line after the executable, in ML-Agents' order. As there, `-logFile` is not
 * added when the extra arguments already carry one (matched without regard to case).
 */
export function buildExecutableArgs(options: ExecutableArgsOptions): string[] {
  const extra = options.extraArgs ?? [];
  const args: string[] = [];
  if (options.noGraphics) args.push('-nographics', '-batchmode');
  args.push(PORT_COMMAND_LINE_ARG, String(options.port));
  const userSetLogFile = extra.some((a) => a.toLowerCase() === '-logfile');
  if (options.logFile !== undefined && options.logFile !== '' && !userSetLogFile) {
    args.push('-logFile', options.logFile);
  }
  args.push(...extra);
  return args;
}

/** The log file path a command line asks the player to write, if any. */
function logFileFromArgs(args: string[]): string | undefined {
  for (let i = args.length - 2; i >= 0; i--) {
    if (args[i].toLowerCase() === '-logfile') return args[i + 1];
  }
  return undefined;
}

/**
 * A clear Error for a failure to start `file`, from the errno code the system gave.
 * Exported so that callers translating their own spawn failures say the same thing.
 */
export function explainSpawnError(file: string, code: string | undefined, cause?: unknown): Error {
  let message: string;
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      message =
        `Cannot run the environment executable "${file}": permission denied. ` +
        `Make it executable with: chmod +x "${file}" (for a whole build folder: chmod -R 755 <folder>). ` +
        'If it lies on a filesystem mounted noexec, copy the build elsewhere.';
      break;
    case 'ENOENT':
      message = isFile(file)
        ? `Cannot run the environment executable "${file}": the file exists but the system could not ` +
          'start it. Either the interpreter named on its first line (#!) is missing, or it is a build ' +
          'for another platform or architecture (a Windows .exe or macOS .app on Linux, or a 32-bit ' +
          '.x86 build without 32-bit libraries). Build the player for this platform and check --env.'
        : `Cannot run the environment executable "${file}": no such file. Check the --env flag.`;
      break;
    case 'ENOEXEC':
      message =
        `Cannot run the environment executable "${file}": it is not a program this system can ` +
        'execute (wrong platform or a damaged file). Build the player for this platform and check --env.';
      break;
    default:
      message =
        `Cannot run the environment executable "${file}"` +
        (code !== undefined ? ` (${code})` : '') +
        (cause instanceof Error ? `: ${cause.message}` : '.') +
        ' Check the --env flag and the file.';
  }
  const err = new Error(message);
  if (cause !== undefined) (err as Error & { cause?: unknown }).cause = cause;
  return err;
}

/** How a launched player ended. */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Options for {@link launchEnvironment}. */
export interface LaunchOptions {
  /** The `--env` value: a path to the build, with or without its extension. */
  executable: string;
  port: number;
  noGraphics: boolean;
  /** Where the player writes its log (`-logFile`); its folder is created when missing. */
  logFile?: string;
  /** Added after ML-Agents' own arguments (`--env-args`). */
  extraArgs?: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /**
   * Copy the player's stdout/stderr to ours as well as keeping its tail. Defaults to true when
   * the environment variable MLAGENTS_SHOW_ENV_OUTPUT is 1 or true.
   */
  showOutput?: boolean;
}

/** When the player ended: before its handshake, or after it (during the run). */
export type ExitPhase = 'before-connect' | 'during-run';

/** A running (or finished) environment executable. */
export interface LaunchedEnvironment {
  readonly pid: number;
  /** The resolved executable that was started. */
  readonly executable: string;
  /** The argv after the executable, exactly as passed. */
  readonly args: string[];
  /** The player log file path, when one was asked for. */
  readonly logFile: string | undefined;
  /** Resolves once the process has exited (its last output read, as far as it comes quickly). */
  readonly exited: Promise<ExitInfo>;
  hasExited(): boolean;
  /** The last few KB of the player's stdout and stderr, interleaved as received. */
  outputTail(): string;
  /**
   * Ends the player's whole process group: SIGTERM, then SIGKILL once `timeoutMs` has passed
   * with any of the group still running. Safe to call more than once and after it has exited.
   */
  close(timeoutMs?: number): Promise<void>;
  /** A message for a player that ended (or will not connect) before reaching the trainer. */
  describeExit(phase?: ExitPhase): string;
}

/** Process groups of players not yet closed, ended when this process exits. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/**
 * The guardian: a small process of its own (own session, no terminal) that ends the players'
 * process groups when this process dies without running its exit hook (killed, or aborted by V8
 * when its heap runs out) and the players do not notice (a stalled build). It reads "+<pgid>"
 * and "-<pgid>" lines on its stdin, and acts when that pipe closes, which the kernel does for a
 * dead process. Inline, so that it runs alike from the TypeScript sources and from dist.
 */
const GUARDIAN_SOURCE = `
const groups = new Set();
let rest = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  const lines = (rest + chunk).split('\\n');
  rest = lines.pop();
  for (const line of lines) {
    if (line[0] === '+') groups.add(Number(line.slice(1)));
    else groups.delete(Number(line.slice(1)));
  }
});
const signalAll = (signal) => {
  for (const pgid of groups) {
    try { process.kill(-pgid, signal); } catch {}
  }
};
process.stdin.on('close', () => {
  signalAll('SIGTERM');
  setTimeout(() => { signalAll('SIGKILL'); process.exit(0); }, 1000);
});
`;

let guardianInput: NodeJS.WritableStream | null = null;

/** Tells the guardian, started on first use, that a group is live (+) or gone (-). */
function tellGuardian(change: '+' | '-', pgid: number): void {
  if (guardianInput === null) {
    const guardian = spawn(process.execPath, ['-e', GUARDIAN_SOURCE], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
    // Neither the guardian nor the pipe to it may keep this process alive.
    guardian.unref();
    (guardian.stdin as unknown as { unref(): void }).unref();
    guardian.on('error', () => undefined);
    guardian.stdin!.on('error', () => undefined);
    guardianInput = guardian.stdin!;
  }
  guardianInput.write(`${change}${pgid}\n`);
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const pgid of liveGroups) signalGroup(pgid, 'SIGKILL');
    liveGroups.clear();
  });
}

/** Sends `signal` to the group; false when no such group exists (already gone). */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** One process as Linux describes it in /proc/<pid>/stat. */
export interface ProcessStat {
  readonly pid: number;
  /** R running, S sleeping, D disk sleep, Z zombie, X dead, ... */
  readonly state: string;
  readonly ppid: number;
  /** Its process group. */
  readonly pgrp: number;
  /** CPU time spent in user mode, in seconds. */
  readonly utimeSeconds: number;
  /** CPU time spent in kernel mode, in seconds. */
  readonly stimeSeconds: number;
}

/** USER_HZ, the unit of the CPU times in /proc: 100 on every Linux Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * Every process of the machine, read from /proc; null where there is no /proc (not Linux). A
 * process that ends while the list is read is left out.
 */
export function readProcessStats(): ProcessStat[] | null {
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return null;
  }
  const processes: ProcessStat[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    processes.push({
      pid: Number(entry),
      state: fields[0],
      ppid: Number(fields[1]),
      pgrp: Number(fields[2]),
      utimeSeconds: Number(fields[11]) / CLOCK_TICKS_PER_SECOND,
      stimeSeconds: Number(fields[12]) / CLOCK_TICKS_PER_SECOND,
    });
  }
  return processes;
}

/**
 * Whether any process of group `pgid` still runs. Zombies do not count: where nothing reaps
 * orphans (some containers' init), a dead grandchild would otherwise look alive forever.
 */
function groupAlive(pgid: number): boolean {
  if (!signalGroup(pgid, 0)) return false;
  const processes = readProcessStats();
  if (processes === null) return true; // no /proc: the signal probe is all we have
  return processes.some((p) => p.pgrp === pgid && p.state !== 'Z' && p.state !== 'X');
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits for `promise`, but at most `ms`; the timer is cleared so it holds nothing open. */
export function waitAtMost(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.then(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Starts the environment executable. Throws a clear Error when it cannot be found or started;
 * a player that starts and then dies is reported through `exited` and `describeExit()`.
 */
export function launchEnvironment(options: LaunchOptions): LaunchedEnvironment {
  const executable = resolveExecutablePath(options.executable);
  if (!isExecutable(executable)) throw explainSpawnError(executable, 'EACCES');

  const args = buildExecutableArgs(options);
  const logFile = logFileFromArgs(args);
  if (logFile !== undefined) {
    fs.mkdirSync(path.dirname(path.resolve(options.cwd ?? process.cwd(), logFile)), {
      recursive: true,
    });
  }
  const showOutput =
    options.showOutput ?? /^(1|true|yes)$/i.test(process.env[SHOW_OUTPUT_ENV_VAR] ?? '');

  let child: ChildProcess;
  try {
    child = spawn(executable, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    throw explainSpawnError(executable, (err as NodeJS.ErrnoException).code, err);
  }
  if (child.pid === undefined) {
    // The failure is also emitted later as an 'error' event; keep it from going unhandled.
    child.on('error', () => undefined);
    throw explainSpawnError(executable, isFile(executable) ? 'ENOENT' : undefined);
  }
  const pid = child.pid;
  liveGroups.add(pid);
  installExitHook();
  tellGuardian('+', pid);

  let tail = '';
  const keep = (chunk: Buffer) => {
    tail += chunk.toString('utf8');
    if (tail.length > OUTPUT_TAIL_BYTES * 2) tail = tail.slice(-OUTPUT_TAIL_BYTES);
  };
  const streamsEnded: Promise<void>[] = [];
  for (const [stream, sink] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ] as const) {
    if (stream === null) continue;
    stream.on('data', (chunk: Buffer) => {
      keep(chunk);
      if (showOutput) sink.write(chunk);
    });
    streamsEnded.push(
      new Promise<void>((resolve) => {
        stream.once('end', resolve);
        stream.once('close', resolve);
        stream.once('error', () => resolve());
      }),
    );
  }

  let exitInfo: ExitInfo | undefined;
  let spawnError: Error | undefined;
  const exited = new Promise<ExitInfo>((resolve) => {
    const finish = (info: ExitInfo) => {
      if (exitInfo !== undefined) return;
      exitInfo = info;
      // Output written just before exit may still be in the pipes; wait for it a little, but a
      // grandchild holding the pipes open must not hold this up.
      void waitAtMost(Promise.all(streamsEnded), 250).then(() => {
        // Stop reading: a surviving grandchild's output is not ours to wait on.
        child.stdout?.destroy();
        child.stderr?.destroy();
        resolve(info);
      });
    };
    child.once('exit', (code, signal) => finish({ code, signal }));
    child.once('error', (err) => {
      spawnError = err;
      finish({ code: null, signal: null });
    });
  });

  let closing: Promise<void> | undefined;
  const close = (timeoutMs = 5000): Promise<void> => {
    if (closing === undefined) {
      closing = (async () => {
        const deadline = Date.now() + Math.max(0, timeoutMs);
        if (groupAlive(pid)) signalGroup(pid, 'SIGTERM');
        while (Date.now() < deadline && (exitInfo === undefined || groupAlive(pid))) {
          await sleep(Math.min(50, Math.max(1, deadline - Date.now())));
        }
        if (exitInfo === undefined || groupAlive(pid)) signalGroup(pid, 'SIGKILL');
        // SIGKILL cannot be refused; waiting on the exit is bounded anyway so close never hangs.
        await waitAtMost(exited, 2000);
        liveGroups.delete(pid);
        tellGuardian('-', pid);
      })();
    }
    return closing;
  };

  const describeExit = (phase: ExitPhase = 'before-connect'): string => {
    const parts: string[] = [];
    if (spawnError !== undefined) {
      parts.push(explainSpawnError(executable, (spawnError as NodeJS.ErrnoException).code, spawnError).message);
    } else if (exitInfo === undefined) {
      parts.push(
        `The environment executable "${executable}" (pid ${pid}) is still running but has not ` +
          `connected to the trainer on port ${options.port}.`,
      );
    } else {
      const how =
        exitInfo.signal !== null
          ? `was killed by signal ${exitInfo.signal}`
          : `exited with code ${exitInfo.code}`;
      parts.push(
        `The environment executable "${executable}" ${how} ` +
          (phase === 'before-connect'
            ? `before it connected to the trainer on port ${options.port}.`
            : `in the middle of the run, while connected to the trainer on port ${options.port}.`),
      );
    }
    parts.push(
      logFile !== undefined
        ? `Read its player log for the cause: ${logFile}`
        : 'No -logFile was given; on Linux Unity writes its player log to ' +
            '~/.config/unity3d/<CompanyName>/<ProductName>/Player.log.',
    );
    const out = tail.slice(-OUTPUT_TAIL_BYTES).trimEnd();
    parts.push(out === '' ? 'It printed nothing.' : `Last output of the process:\n${out}`);
    return parts.join('\n');
  };

  return {
    pid,
    executable,
    args,
    logFile,
    exited,
    hasExited: () => exitInfo !== undefined,
    outputTail: () => tail.slice(-OUTPUT_TAIL_BYTES),
    close,
    describeExit,
  };
}
