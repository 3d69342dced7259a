/**
 * Reader for one side-channel payload received from the environment.
 *
 * Values come out in the order they were written, little-endian, as in Unity ML-Agents.
 * Like upstream, every read takes a default that is returned once the payload is used up:
 * an older Unity build that writes fewer fields than we expect stays readable. A value that
 * starts inside the payload but does not fit in it is corruption, not an old build, so it
 * throws an Error that names the offset and the lengths.
 */
export class IncomingMessage {
  private readonly bytes: Uint8Array;
  private readonly view: DataView;
  private offset = 0;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Bytes not read yet. */
  get remaining(): number {
    return this.bytes.byteLength - this.offset;
  }

  /** Position of the next read within the payload. */
  get position(): number {
    return this.offset;
  }

  readBool(defaultValue = false): boolean {
    if (this.atEnd()) return defaultValue;
    this.require(1, 'bool');
    const value = this.view.getUint8(this.offset) !== 0;
    this.offset += 1;
    return value;
  }

  readInt32(defaultValue = 0): number {
    if (this.atEnd()) return defaultValue;
    this.require(4, 'int32');
    const value = this.view.getInt32(this.offset, true);
    this.offset += 4;
    return value;
  }

  readFloat32(defaultValue = 0): number {
    if (this.atEnd()) return defaultValue;
    this.require(4, 'float32');
    const value = this.view.getFloat32(this.offset, true);
    this.offset += 4;
    return value;
  }

  /** An int32 count, then that many float32 values. */
  readFloat32List(defaultValue: number[] = []): number[] {
    if (this.atEnd()) return defaultValue;
    const start = this.offset;
    const count = this.readInt32();
    if (count < 0) {
      throw new Error(
        `IncomingMessage: float list at offset ${start} has a negative count (${count})`,
      );
    }
    // Check the whole list before allocating, so a corrupt count cannot ask for gigabytes.
    this.require(count * 4, `list of ${count} float32 values`);
    const values = new Array<number>(count);
    for (let i = 0; i < count; i++) {
      values[i] = this.view.getFloat32(this.offset, true);
      this.offset += 4;
    }
    return values;
  }

  /** An int32 byte length, then that many ASCII bytes (Unity and Python both use ASCII). */
  readString(defaultValue = ''): string {
    if (this.atEnd()) return defaultValue;
    const start = this.offset;
    const length = this.readInt32();
    if (length < 0) {
      throw new Error(
        `IncomingMessage: string at offset ${start} has a negative length (${length})`,
      );
    }
    this.require(length, `string of ${length} bytes`);
    const raw = this.bytes.subarray(this.offset, this.offset + length);
    for (let i = 0; i < raw.length; i++) {
      if (raw[i] > 0x7f) {
        throw new Error(
          `IncomingMessage: string at offset ${start} is not ASCII ` +
            `(byte 0x${raw[i].toString(16)} at offset ${this.offset + i})`,
        );
      }
    }
    this.offset += length;
    return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('latin1');
  }

  /** A copy of the whole payload, whatever has been read already (as upstream). */
  readRawBytes(): Uint8Array {
    return this.bytes.slice();
  }

  private atEnd(): boolean {
    return this.offset >= this.bytes.byteLength;
  }

  private require(size: number, what: string): void {
    if (this.offset + size > this.bytes.byteLength) {
      throw new Error(
        `IncomingMessage: truncated ${what} at offset ${this.offset}: needs ${size} bytes ` +
          `but only ${this.remaining} remain in a ${this.bytes.byteLength}-byte message`,
      );
    }
  }
}
