/**
 * What the board knows of a results folder, read only from the files the trainer writes (ours or
 * ML-Agents' Python trainer):
 *
 *   <results>/<run>/configuration.yaml                       the resolved options (max_steps, lessons' names)
 *   <results>/<run>/run_logs/training_status.json            checkpoints, lessons, ELO
 *   <results>/<run>/run_logs/timers.json                     where the time goes
 *   <results>/<run>/run_logs/environments.json               (ours) the environments' state
 *   <results>/<run>/<behavior>/events.out.tfevents.*         the scalars
 *
 * Symbolic links are never followed. A file that cannot be read or parsed becomes a note of its
 * run, replaced once the file reads well again.
 *
 * Event files are read lazily, as a folder of long runs holds gigabytes of them. Listing a
 * behavior reads only the first and last stretches of its files (its tags, its last steps); its
 * first request for points answers at once with a sample spread over the whole run and starts
 * reading every record in the background, a chunk at a time between requests, one behavior after
 * another in the order asked. Once read, a behavior's files are followed as they grow. Small
 * behaviors (the usual run) are read whole when listed.
 */
import * as fs from 'fs';
import * as path from 'path';
import { parse as parseYaml } from 'yaml';
import { ENVIRONMENTS_FILE_NAME, type EnvironmentsStatus } from '../stats/environment-status';
import { TIMERS_FILE_NAME, type TimerTree } from '../stats/timers';
import { StatusType, TRAINING_STATUS_FILE_NAME, type ModelCheckpoint } from '../stats/training-status';
import { EventFileTail, sampleScalars, type ScalarSink } from './event-reader';
import { ScalarSeries, type SeriesPoints } from './scalar-series';

export const EVENT_FILE_PREFIX = 'events.out.tfevents.';
const CONFIGURATION_FILE = 'configuration.yaml';
const RUN_LOGS = 'run_logs';
/** How many summaries back the steps/s of a live run is measured over. */
const RATE_WINDOW = 10;

export interface ReadingOptions {
  /** A behavior whose event files hold at most this many bytes is read whole when listed. */
  eagerBytes: number;
  /** Bytes read at a time in the background, between which requests are answered. */
  chunkBytes: number;
  /** How a background chunk is put off until requests waiting were answered. */
  schedule: (next: () => void) => void;
}

export const DEFAULT_READING: ReadingOptions = {
  eagerBytes: 256 * 1024,
  chunkBytes: 2 ** 20,
  schedule: (next) => setImmediate(next),
};

/** Listing a behavior reads its first and last stretches of this size. */
const GLANCE_BYTES = 32 * 1024;
/** A sample served before a behavior is read: 64 stretches of 8 KiB spread over its files. */
const SAMPLE_WINDOWS = 64;
const SAMPLE_WINDOW_BYTES = 8 * 1024;

/** Something the page must redraw. */
export type BoardUpdate =
  /** Points appended to a series; `from` is the index of the first (the series' length before). */
  | { kind: 'points'; run: string; behavior: string; tag: string; from: number; points: SeriesPoints }
  /** A behavior read in the background: `read` of its event bytes, 1 once every record is read. */
  | { kind: 'reading'; run: string; behavior: string; read: number }
  /** The list of runs, behaviors or tags changed. */
  | { kind: 'runs' }
  /** A run's configuration, status, timers or environments changed. */
  | { kind: 'run'; run: string };

export interface CheckpointView {
  behavior: string;
  steps: number;
  reward: number | null;
  /** Seconds since the epoch. */
  creationTime: number;
  /** The .onnx as a path inside the results folder ("/"-separated), or null when it is gone. */
  file: string | null;
  final: boolean;
}

export interface BehaviorSummary {
  name: string;
  /** Points per tag; null until the behavior's event files are read. */
  tags: Array<{ tag: string; points: number | null }>;
  /** The share of its event bytes read: 0 when only listed, 1 once read. */
  read: number;
  lastStep: number;
  maxSteps: number | null;
  /** Over the last summaries; null before two summaries at different times. */
  stepsPerSecond: number | null;
  secondsLeft: number | null;
}

export interface RunSummary {
  name: string;
  /** Training now: its environments.json says so or, without one, its files changed while watched. */
  live: boolean;
  behaviors: BehaviorSummary[];
  notes: string[];
}

export interface RunDetail {
  name: string;
  configuration: string | null;
  checkpoints: CheckpointView[];
  /** Per environment parameter, its lesson number and, from configuration.yaml, the lesson's name. */
  lessons: Array<{ parameter: string; lesson: number; name: string | null }>;
  elo: Array<{ behavior: string; elo: number }>;
  timers: TimerTree | null;
  environments: EnvironmentsStatus | null;
  notes: string[];
}

/** (step, wall time) of the last RATE_WINDOW summaries, in the order written: a new one whenever the step changes. */
type Summaries = Array<[number, number]>;

function noteSummary(summaries: Summaries, step: number, wallTime: number): void {
  const last = summaries[summaries.length - 1];
  if (last !== undefined && last[0] === step) return;
  summaries.push([step, wallTime]);
  if (summaries.length > RATE_WINDOW) summaries.shift();
}

/** A behavior's event files, from listed (a glance at their ends) through read in the background to read and followed. */
class BehaviorState {
  state: 'listed' | 'reading' | 'read' = 'listed';
  /** Its event files in the order TensorBoard reads them, with their sizes when last listed. */
  files: Array<{ path: string; size: number }> = [];
  readonly tails = new Map<string, EventFileTail>();
  readonly series = new Map<string, ScalarSeries>();
  /** Of the records read, for steps/s and the last step. */
  readonly summaries: Summaries = [];
  /** Before it is read: the tags and summaries of the first and last stretches of its files. */
  private glance: { tags: Set<string>; summaries: Summaries } = { tags: new Set(), summaries: [] };
  /** Before it is read: points sampled over its whole run, made ahead or at the first request. */
  private sampled: Map<string, ScalarSeries> | null = null;

  constructor(
    readonly name: string,
    readonly dir: string,
  ) {}

  /** Lists its event files again; a behavior not yet asked for takes a new glance at them. */
  list(eagerBytes: number): void {
    const before = this.files;
    this.files = eventFiles(this.dir);
    const unchanged = before.length === this.files.length && before.every((file, i) => file.path === this.files[i].path && file.size === this.files[i].size);
    if (this.state !== 'listed' || (unchanged && before.length > 0)) return;
    if (this.totalBytes <= eagerBytes) {
      for (const file of this.files) this.read(file.path);
      this.state = 'read';
      return;
    }
    const glance = { tags: new Set<string>(), summaries: [] as Summaries };
    sampleScalars(this.files, 2, GLANCE_BYTES, (tag, step, wallTime) => {
      glance.tags.add(tag);
      noteSummary(glance.summaries, step, wallTime);
    });
    this.glance = glance;
    this.sampled = null;
  }

  get totalBytes(): number {
    return this.files.reduce((sum, file) => sum + file.size, 0);
  }

  /** The share of its event bytes read. */
  get readShare(): number {
    if (this.state === 'read') return 1;
    const total = this.totalBytes;
    const read = [...this.tails.values()].reduce((sum, tail) => sum + tail.bytesRead, 0);
    return total === 0 ? 0 : Math.min(1, read / total);
  }

  /** Reads what was appended to the event file; per tag, how many points it had before. */
  read(filePath: string, maxBytes = Infinity): { before: Map<string, number>; atEnd: boolean } {
    let tail = this.tails.get(filePath);
    if (tail === undefined) {
      tail = new EventFileTail(filePath);
      this.tails.set(filePath, tail);
    }
    const before = new Map([...this.series].map(([tag, series]) => [tag, series.length]));
    const atEnd = tail.read((tag, step, wallTime, value) => {
      let series = this.series.get(tag);
      if (series === undefined) {
        series = new ScalarSeries();
        this.series.set(tag, series);
      }
      series.push(step, wallTime, value);
      noteSummary(this.summaries, step, wallTime);
    }, maxBytes);
    return { before: new Map([...this.series.keys()].map((tag) => [tag, before.get(tag) ?? 0])), atEnd };
  }

  /**
   * Reads about `maxBytes` more in the background: the first file not read to its end, listed
   * anew at each call (a run goes on writing). True once every file was read to its end.
   */
  readChunk(maxBytes: number): boolean {
    this.files = eventFiles(this.dir);
    for (const file of this.files) {
      const tail = this.tails.get(file.path);
      if (tail !== undefined && tail.bytesRead >= file.size) continue;
      if (!this.read(file.path, maxBytes).atEnd) return false;
    }
    return true;
  }

  /** The points of a tag: all of them once read, else a sample over the whole run (made once). */
  seriesOf(tag: string): { series: ScalarSeries; sampled: boolean } | null {
    if (this.state === 'read') {
      const series = this.series.get(tag);
      return series === undefined ? null : { series, sampled: false };
    }
    const series = this.sample().get(tag);
    return series === undefined ? null : { series, sampled: true };
  }

  /** Points sampled over its whole run, per tag: made once, served until it is read. */
  sample(): Map<string, ScalarSeries> {
    if (this.sampled === null) {
      const sampled = new Map<string, ScalarSeries>();
      const sink: ScalarSink = (name, step, wallTime, value) => {
        if (!sampled.has(name)) sampled.set(name, new ScalarSeries());
        sampled.get(name)!.push(step, wallTime, value);
      };
      sampleScalars(this.files, SAMPLE_WINDOWS, SAMPLE_WINDOW_BYTES, sink);
      this.sampled = sampled;
    }
    return this.sampled;
  }

  /** Its tags with their point counts (null before it is read). */
  tags(): Array<{ tag: string; points: number | null }> {
    if (this.state === 'read') return [...this.series].map(([tag, series]) => ({ tag, points: series.length }));
    const names = new Set([...this.glance.tags, ...(this.sampled?.keys() ?? [])]);
    return [...names].map((tag) => ({ tag, points: null }));
  }

  get notes(): string[] {
    const notes: string[] = [];
    for (const tail of this.tails.values()) {
      notes.push(...tail.notes);
      if (tail.cutAt !== null) notes.push(`${tail.filePath}: ends inside a record at byte offset ${tail.cutAt} (cut, or being written)`);
    }
    return notes;
  }

  private get knownSummaries(): Summaries {
    return this.state === 'read' ? this.summaries : this.glance.summaries;
  }

  get lastStep(): number {
    const summaries = this.knownSummaries;
    return summaries.length === 0 ? 0 : summaries[summaries.length - 1][0];
  }

  stepsPerSecond(): number | null {
    const window = this.knownSummaries;
    if (window.length < 2) return null;
    const [firstStep, firstTime] = window[0];
    const [lastStep, lastTime] = window[window.length - 1];
    return lastTime > firstTime ? (lastStep - firstStep) / (lastTime - firstTime) : null;
  }
}

class RunState {
  readonly behaviors = new Map<string, BehaviorState>();
  configuration: { text: string; parsed: Record<string, unknown> } | null = null;
  status: Record<string, Record<string, unknown>> | null = null;
  timers: TimerTree | null = null;
  environments: EnvironmentsStatus | null = null;
  /** Problems with the run's own files, by file. */
  readonly fileNotes = new Map<string, string>();
  changedWhileWatched = false;

  constructor(
    readonly name: string,
    readonly dir: string,
  ) {}

  get live(): boolean {
    if (this.environments !== null) return this.environments.state !== 'ended';
    return this.changedWhileWatched;
  }

  /** A behavior's max_steps from configuration.yaml (its own section, or default_settings). */
  maxSteps(behavior: string): number | null {
    const parsed = this.configuration?.parsed;
    const section = (key: string) => (parsed?.[key] ?? null) as Record<string, unknown> | null;
    const own = (section('behaviors')?.[behavior] ?? null) as Record<string, unknown> | null;
    const steps = own?.max_steps ?? section('default_settings')?.max_steps;
    return typeof steps === 'number' ? steps : null;
  }
}

export class ResultsFolder {
  private readonly runs = new Map<string, RunState>();
  private readonly reading: ReadingOptions;
  /** Behaviors to read in the background, the one being read first. */
  private readonly queue: Array<{ run: RunState; behavior: BehaviorState }> = [];
  /** Set once the board closes: nothing more is read in the background. */
  private stopped = false;

  /**
   * `root` must be the real path of the results folder (no symbolic link in it); `onUpdate` hears
   * of what background reading changed.
   */
  constructor(
    readonly root: string,
    private readonly onUpdate: (updates: BoardUpdate[]) => void = () => undefined,
    reading: Partial<ReadingOptions> = {},
  ) {
    this.reading = { ...DEFAULT_READING, ...reading };
  }

  /** Lists every run from scratch (reading only small behaviors whole). */
  load(): void {
    for (const name of subfolders(this.root)) this.addRun(name);
  }

  /**
   * Samples the behaviors not yet read, one at a time between requests, in the order the page
   * lists them: the page's first charts then need not wait for their samples.
   */
  sampleInBackground(): void {
    const waiting = [...this.runs.values()].sort((a, b) => a.name.localeCompare(b.name)).flatMap((run) => [...run.behaviors.values()]);
    const next = () => {
      const behavior = waiting.shift();
      if (behavior === undefined || this.stopped) return;
      if (behavior.state !== 'read') behavior.sample();
      this.reading.schedule(next);
    };
    this.reading.schedule(next);
  }

  /** Ends the background work. */
  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
  }

  /** Lists the folder again, for changes made before it was watched. */
  refresh(): BoardUpdate[] {
    const names = subfolders(this.root);
    for (const name of this.runs.keys()) if (!names.includes(name)) this.runs.delete(name);
    for (const name of names) {
      const run = this.runs.get(name);
      if (run === undefined) this.addRun(name);
      else this.readBehaviors(run);
    }
    return [{ kind: 'runs' }];
  }

  /**
   * Takes in a change of `filePath` (added, appended, replaced or removed) and says what the page
   * must redraw.
   */
  changed(filePath: string): BoardUpdate[] {
    const parts = path.relative(this.root, filePath).split(path.sep);
    if (parts[0] === '' || parts[0] === '..' || path.isAbsolute(parts[0])) return [];
    const run = this.runs.get(parts[0]);
    if (run === undefined) {
      if (!isRealFolder(path.join(this.root, parts[0]))) return [];
      this.addRun(parts[0]);
      this.runs.get(parts[0])!.changedWhileWatched = true;
      return [{ kind: 'runs' }];
    }
    run.changedWhileWatched = true;
    if (!isRealFolder(run.dir)) {
      this.runs.delete(run.name);
      return [{ kind: 'runs' }];
    }
    if (parts.length === 2 && parts[1] === CONFIGURATION_FILE) {
      readConfiguration(run);
      return [{ kind: 'run', run: run.name }, { kind: 'runs' }];
    }
    if (parts.length === 3 && parts[1] === RUN_LOGS) {
      if (!readRunLog(run, parts[2])) return [];
      return [{ kind: 'run', run: run.name }, { kind: 'runs' }];
    }
    if (parts.length === 1 || parts.length === 2) {
      // A folder appeared or went (a behavior's, or a final model beside them): the run's structure.
      const before = [...run.behaviors.keys()].join('\0');
      this.readBehaviors(run);
      return [...run.behaviors.keys()].join('\0') === before ? [{ kind: 'run', run: run.name }] : [{ kind: 'runs' }];
    }
    if (parts.length === 3 && parts[2].startsWith(EVENT_FILE_PREFIX)) return this.eventFileChanged(run, parts[1], filePath);
    // A checkpoint's file came or went: the list of checkpoints says whether it can be downloaded.
    if (parts.length === 3 && parts[2].endsWith('.onnx')) return [{ kind: 'run', run: run.name }];
    return [];
  }

  /** Every event file listed. */
  eventFiles(): string[] {
    return [...this.runs.values()].flatMap((run) => [...run.behaviors.values()].flatMap((behavior) => behavior.files.map((file) => file.path)));
  }

  summaries(): RunSummary[] {
    return [...this.runs.values()]
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((run) => ({
        name: run.name,
        live: run.live,
        behaviors: [...run.behaviors.values()].map((behavior) => {
          const maxSteps = run.maxSteps(behavior.name);
          const rate = behavior.stepsPerSecond();
          const left = maxSteps === null || rate === null || rate <= 0 ? null : Math.max(0, maxSteps - behavior.lastStep) / rate;
          return {
            name: behavior.name,
            tags: behavior.tags().sort((a, b) => a.tag.localeCompare(b.tag)),
            read: behavior.readShare,
            lastStep: behavior.lastStep,
            maxSteps,
            stepsPerSecond: run.live ? rate : null,
            secondsLeft: run.live ? left : null,
          };
        }),
        notes: [...run.fileNotes.values(), ...[...run.behaviors.values()].flatMap((b) => b.notes)],
      }));
  }

  detail(runName: string): RunDetail | null {
    const run = this.runs.get(runName);
    if (run === undefined) return null;
    const status = run.status ?? {};
    const checkpoints: CheckpointView[] = [];
    const lessons: RunDetail['lessons'] = [];
    const elo: RunDetail['elo'] = [];
    for (const [category, state] of Object.entries(status)) {
      if (category === StatusType.STATS_METADATA || typeof state !== 'object' || state === null) continue;
      const view = (checkpoint: ModelCheckpoint, final: boolean): CheckpointView => ({
        behavior: category,
        steps: checkpoint.steps,
        reward: checkpoint.reward ?? null,
        creationTime: checkpoint.creation_time,
        file: this.modelFile(run, String(checkpoint.file_path)),
        final,
      });
      const list = state[StatusType.CHECKPOINTS];
      if (Array.isArray(list)) checkpoints.push(...list.map((c: ModelCheckpoint) => view(c, false)));
      const final = state[StatusType.FINAL_CHECKPOINT] as ModelCheckpoint | undefined;
      if (final !== undefined) checkpoints.push(view(final, true));
      const lesson = state[StatusType.LESSON_NUM];
      if (typeof lesson === 'number') lessons.push({ parameter: category, lesson, name: lessonName(run, category, lesson) });
      const rating = state[StatusType.ELO];
      if (typeof rating === 'number') elo.push({ behavior: category, elo: rating });
    }
    return {
      name: run.name,
      configuration: run.configuration?.text ?? null,
      checkpoints,
      lessons,
      elo,
      timers: run.timers,
      environments: run.environments,
      notes: [...run.fileNotes.values()],
    };
  }

  /**
   * The points of one tag, at most about `maxPoints` of them; null when there is no such series.
   * A behavior not yet read answers with a sample over its run (`sampled`, no `total`; empty for
   * a tag the sample missed) and is read in the background: a 'reading' update with `read` 1
   * says when all its points can be asked for.
   */
  points(runName: string, behaviorName: string, tag: string, maxPoints: number): (SeriesPoints & { total: number | null; sampled: boolean }) | null {
    const run = this.runs.get(runName);
    const behavior = run?.behaviors.get(behaviorName);
    if (run === undefined || behavior === undefined) return null;
    if (behavior.state === 'listed') this.readInBackground(run, behavior);
    const found = behavior.seriesOf(tag);
    if (found === null) return behavior.state === 'read' ? null : { steps: [], wallTimes: [], values: [], total: null, sampled: true };
    return { ...found.series.overview(maxPoints), total: found.sampled ? null : found.series.length, sampled: found.sampled };
  }

  private readInBackground(run: RunState, behavior: BehaviorState): void {
    if (this.stopped) return;
    behavior.state = 'reading';
    this.queue.push({ run, behavior });
    if (this.queue.length === 1) this.reading.schedule(() => this.readNextChunk());
  }

  /** One chunk of the first behavior in the queue; the next is put off so that requests go first. */
  private readNextChunk(): void {
    const next = this.queue[0];
    if (next === undefined) return;
    const { run, behavior } = next;
    if (this.runs.get(run.name) !== run || run.behaviors.get(behavior.name) !== behavior) {
      this.queue.shift(); // Its run or behavior went meanwhile.
    } else {
      const done = behavior.readChunk(this.reading.chunkBytes);
      if (done) {
        behavior.state = 'read';
        this.queue.shift();
      }
      const reading: BoardUpdate = { kind: 'reading', run: run.name, behavior: behavior.name, read: behavior.readShare };
      this.onUpdate(done ? [reading, { kind: 'runs' }] : [reading]);
    }
    if (this.queue.length > 0) this.reading.schedule(() => this.readNextChunk());
  }

  private addRun(name: string): void {
    const run = new RunState(name, path.join(this.root, name));
    this.runs.set(name, run);
    readConfiguration(run);
    for (const file of [TRAINING_STATUS_FILE_NAME, TIMERS_FILE_NAME, ENVIRONMENTS_FILE_NAME]) readRunLog(run, file);
    this.readBehaviors(run);
  }

  /** Finds the run's behavior folders (those holding event files), lists them and reads what is new in those read. */
  private readBehaviors(run: RunState): void {
    const present = new Set<string>();
    for (const name of subfolders(run.dir)) {
      if (name === RUN_LOGS) continue;
      const dir = path.join(run.dir, name);
      if (eventFiles(dir).length === 0) continue;
      present.add(name);
      if (!run.behaviors.has(name)) run.behaviors.set(name, new BehaviorState(name, dir));
      this.listBehavior(run.behaviors.get(name)!);
    }
    for (const name of run.behaviors.keys()) if (!present.has(name)) run.behaviors.delete(name);
  }

  private listBehavior(behavior: BehaviorState): void {
    const wasRead = behavior.state === 'read';
    behavior.list(this.reading.eagerBytes);
    if (wasRead) for (const file of behavior.files) behavior.read(file.path);
  }

  private eventFileChanged(run: RunState, behaviorName: string, filePath: string): BoardUpdate[] {
    const behavior = run.behaviors.get(behaviorName);
    if (!isRealFile(filePath)) {
      // An event file went (a rerun with --force deletes the old ones): list the behavior anew.
      if (behavior?.files.some((file) => file.path === filePath)) {
        run.behaviors.delete(behaviorName);
        this.readBehaviors(run);
        const renewed = run.behaviors.get(behaviorName);
        if (behavior.state !== 'listed' && renewed?.state === 'listed') this.readInBackground(run, renewed);
        return [{ kind: 'runs' }];
      }
      return [];
    }
    if (behavior === undefined) {
      const added = new BehaviorState(behaviorName, path.dirname(filePath));
      run.behaviors.set(behaviorName, added);
      this.listBehavior(added);
      return [{ kind: 'runs' }];
    }
    // Being read: the background read goes on to the file's new end.
    if (behavior.state === 'reading') return [];
    // Listed: its glance (last step, tags) is taken again.
    if (behavior.state === 'listed') {
      this.listBehavior(behavior);
      return [{ kind: 'runs' }];
    }
    if (!behavior.files.some((file) => file.path === filePath)) behavior.files = eventFiles(behavior.dir);
    const tagsBefore = behavior.series.size;
    const updates: BoardUpdate[] = [];
    for (const [tag, from] of behavior.read(filePath).before) {
      const series = behavior.series.get(tag)!;
      if (series.length > from) {
        updates.push({ kind: 'points', run: run.name, behavior: behaviorName, tag, from, points: series.pointsFrom(from) });
      }
    }
    if (behavior.series.size !== tagsBefore) updates.push({ kind: 'runs' });
    return updates;
  }

  /**
   * Where a checkpoint's .onnx lies in this results folder. training_status.json holds the path
   * as the trainer saw it (relative to its working folder, or absolute, maybe on another machine),
   * so the file is looked for by its last components inside the run's folder.
   */
  private modelFile(run: RunState, recorded: string): string | null {
    const parts = recorded.split(/[/\\]/).filter((part) => part !== '' && part !== '.' && part !== '..');
    for (let count = 1; count <= Math.min(2, parts.length); count++) {
      const candidate = path.join(run.dir, ...parts.slice(-count));
      if (isRealFile(candidate)) return [run.name, ...parts.slice(-count)].join('/');
    }
    return null;
  }
}

function readConfiguration(run: RunState): void {
  const file = path.join(run.dir, CONFIGURATION_FILE);
  const text = readText(run, file);
  if (text === null) {
    run.configuration = null;
    return;
  }
  try {
    const parsed = parseYaml(text) as unknown;
    run.configuration = { text, parsed: typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {} };
  } catch (error) {
    run.fileNotes.set(file, `${file}: not valid YAML (${(error as Error).message.split('\n')[0]})`);
    run.configuration = { text, parsed: {} };
  }
}

/** Reads one of run_logs' JSON files; false for another file. */
function readRunLog(run: RunState, name: string): boolean {
  const assign: Record<string, (value: unknown) => void> = {
    [TRAINING_STATUS_FILE_NAME]: (value) => (run.status = value as RunState['status']),
    [TIMERS_FILE_NAME]: (value) => (run.timers = value as TimerTree | null),
    [ENVIRONMENTS_FILE_NAME]: (value) => (run.environments = value as EnvironmentsStatus | null),
  };
  const set = assign[name];
  if (set === undefined) return false;
  const file = path.join(run.dir, RUN_LOGS, name);
  const text = readText(run, file);
  if (text === null) {
    set(null);
    return true;
  }
  try {
    set(JSON.parse(text));
  } catch (error) {
    // Python's json.dump writes in place: a read can meet half a file, which the next change completes.
    run.fileNotes.set(file, `${file}: not valid JSON (${(error as Error).message}); kept the last good read`);
  }
  return true;
}

/** A regular file's text (no symbolic link), or null when it is absent. Clears the file's note. */
function readText(run: RunState, file: string): string | null {
  run.fileNotes.delete(file);
  if (!isRealFile(file)) return null;
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    run.fileNotes.set(file, `${file}: could not be read (${(error as Error).message})`);
    return null;
  }
}

function lessonName(run: RunState, parameter: string, lesson: number): string | null {
  const parameters = run.configuration?.parsed.environment_parameters as Record<string, { curriculum?: Array<{ name?: unknown }> }> | undefined;
  const name = parameters?.[parameter]?.curriculum?.[lesson]?.name;
  return typeof name === 'string' ? name : null;
}

/** The folders directly in `dir`, symbolic links left out. */
function subfolders(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
  } catch {
    return [];
  }
}

/** The event files of a behavior's folder in the order TensorBoard reads them, with their sizes; links left out. */
function eventFiles(dir: string): Array<{ path: string; size: number }> {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .filter((entry) => entry.isFile() && entry.name.startsWith(EVENT_FILE_PREFIX))
    .map((entry) => path.join(dir, entry.name))
    .sort()
    .map((file) => ({ path: file, size: fs.lstatSync(file, { throwIfNoEntry: false })?.size ?? 0 }));
}

function isRealFolder(dir: string): boolean {
  return fs.lstatSync(dir, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

function isRealFile(file: string): boolean {
  return fs.lstatSync(file, { throwIfNoEntry: false })?.isFile() ?? false;
}
