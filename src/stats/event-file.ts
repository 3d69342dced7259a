/**
 * TensorBoard event files: Event protobuf messages (protos/tensorboard/*.proto) in TFRecord
 * framing. The writer names its files and starts them as torch's SummaryWriter does, so that
 * TensorBoard (and any tool reading ML-Agents results) finds and reads them; the reader checks
 * every CRC and serves the tests and the built-in board.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as protobuf from 'protobufjs';
import { FileWriteError } from '../common/whole-files';
import { PACKAGE_VERSION, PROTO_DIR } from '../communicator/messages';
import { decodeRecords, encodeRecord } from './tfrecord';

/** The file_version of every event file's first event. */
export const EVENT_FILE_VERSION = 'brain.Event:2';

/** Written in the first event's source_metadata: which program wrote the file. */
export const EVENT_FILE_WRITER_NAME = `mlagents-ts ${PACKAGE_VERSION}`;

/** TensorFlow's DataType values used in our summaries. */
export enum TensorDataType {
  DT_FLOAT = 1,
  DT_STRING = 7,
}

export interface HistogramProto {
  min: number;
  max: number;
  num: number;
  sum: number;
  sum_squares: number;
  bucket_limit: number[];
  bucket: number[];
}

export interface TensorProto {
  dtype: TensorDataType;
  tensor_shape?: { dim: Array<{ size: number; name?: string }> };
  float_val?: number[];
  string_val?: Uint8Array[];
}

export interface SummaryMetadata {
  plugin_data?: { plugin_name: string; content?: Uint8Array };
  display_name?: string;
  summary_description?: string;
}

/** One tagged value; exactly one of simple_value, histo and tensor is set. */
export interface SummaryValue {
  tag: string;
  metadata?: SummaryMetadata;
  simple_value?: number;
  histo?: HistogramProto;
  tensor?: TensorProto;
}

/** An event as written and as read back; exactly one of file_version and summary is set. */
export interface TensorboardEvent {
  /** Seconds since the Unix epoch. */
  wall_time: number;
  step: number;
  file_version?: string;
  summary?: { value: SummaryValue[] };
  source_metadata?: { writer: string };
}

let eventType: protobuf.Type | undefined;

function eventProto(): protobuf.Type {
  if (eventType === undefined) {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => path.join(PROTO_DIR, target);
    root.loadSync(['tensorboard/event.proto'], { keepCase: true });
    root.resolveAll();
    eventType = root.lookupType('tensorboard.Event');
  }
  return eventType;
}

/** The bytes of one Event message (without framing). Step 0 is left out, as proto3 writers do. */
export function encodeEvent(event: TensorboardEvent): Uint8Array {
  const { step, ...rest } = event;
  return eventProto().encode(step === 0 ? rest : event).finish();
}

export function decodeEvent(data: Uint8Array): TensorboardEvent {
  const type = eventProto();
  const decoded = type.toObject(type.decode(data), { longs: Number, arrays: true });
  return { wall_time: 0, step: 0, ...decoded } as TensorboardEvent;
}

/** Numbers each file this process opens, as TensorBoard's writer does (its _global_uid). */
let filesOpened = 0;

/**
 * TensorBoard's file name, `events.out.tfevents.<seconds, 10 digits>.<host>.<pid>.<n>`: the
 * pattern torch's SummaryWriter (through tensorboard's EventFileWriter) uses.
 */
export function eventFileName(wallTimeSeconds: number, host = os.hostname(), pid = process.pid): string {
  const seconds = String(Math.trunc(wallTimeSeconds)).padStart(10, '0');
  return `events.out.tfevents.${seconds}.${host}.${pid}.${filesOpened++}`;
}

/**
 * Appends events to a new event file in `directory`. Events wait in memory until flush(), which
 * appends them whole or not at all (a failed write is cut off again), so that a reader never sees
 * half a batch; close() flushes.
 */
export class EventFileWriter {
  readonly path: string;
  private fd: number | null;
  private pending: Uint8Array[] = [];
  /** The bytes of the events written whole so far. */
  private size = 0;

  constructor(directory: string, private readonly clock: () => number = () => Date.now() / 1000) {
    fs.mkdirSync(directory, { recursive: true });
    const now = this.clock();
    this.path = path.join(directory, eventFileName(now));
    this.fd = fs.openSync(this.path, 'wx');
    this.add({
      wall_time: now,
      step: 0,
      file_version: EVENT_FILE_VERSION,
      source_metadata: { writer: EVENT_FILE_WRITER_NAME },
    });
    try {
      this.flush();
    } catch (error) {
      // Not even the first event fits: no empty file is left behind.
      fs.closeSync(this.fd);
      fs.rmSync(this.path, { force: true });
      throw error;
    }
  }

  /** Queues one event; wall_time defaults to now. */
  add(event: Omit<TensorboardEvent, 'wall_time'> & { wall_time?: number }): void {
    if (this.fd === null) throw new Error(`The event file ${this.path} is closed`);
    this.pending.push(encodeRecord(encodeEvent({ ...event, wall_time: event.wall_time ?? this.clock() })));
  }

  flush(): void {
    if (this.fd === null || this.pending.length === 0) return;
    const batch = Buffer.concat(this.pending);
    try {
      for (let written = 0; written < batch.length; ) {
        written += fs.writeSync(this.fd, batch, written, batch.length - written, this.size + written);
      }
    } catch (error) {
      fs.ftruncateSync(this.fd, this.size);
      throw new FileWriteError(this.path, error);
    }
    this.size += batch.length;
    this.pending = [];
  }

  close(): void {
    if (this.fd === null) return;
    this.flush();
    fs.closeSync(this.fd);
    this.fd = null;
  }
}

/** Every event of an event file, every record's CRCs checked (errors name the byte offset). */
export function readEventFile(filePath: string): TensorboardEvent[] {
  return decodeRecords(fs.readFileSync(filePath), filePath).map(decodeEvent);
}

/** The event files TensorBoard would read in `directory`, oldest name first. */
export function listEventFiles(directory: string): string[] {
  return fs
    .readdirSync(directory)
    .filter((name) => name.startsWith('events.out.tfevents.'))
    .sort()
    .map((name) => path.join(directory, name));
}
