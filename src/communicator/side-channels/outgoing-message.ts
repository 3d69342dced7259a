/**
 * Writer for one side-channel payload sent to the environment.
 *
 * Little-endian throughout, strings in ASCII, matching what Unity's IncomingMessage reads.
 * Values that the other side could not represent (an int32 out of range, a non-ASCII
 * string) throw here, at the caller, instead of arriving garbled in Unity.
 */
export class OutgoingMessage {
  private bytes = new Uint8Array(64);
  private view = new DataView(this.bytes.buffer);
  private length = 0;

  /** The bytes written so far (a view; copy it if you keep it past the next write). */
  get buffer(): Uint8Array {
    return this.bytes.subarray(0, this.length);
  }

  writeBool(value: boolean): void {
    this.reserve(1);
    this.view.setUint8(this.length, value ? 1 : 0);
    this.length += 1;
  }

  writeInt32(value: number): void {
    if (!Number.isInteger(value) || value < -0x80000000 || value > 0x7fffffff) {
      throw new RangeError(`OutgoingMessage.writeInt32: ${value} is not a 32-bit integer`);
    }
    this.reserve(4);
    this.view.setInt32(this.length, value, true);
    this.length += 4;
  }

  /** Stored at 32-bit precision, as on the C# side. */
  writeFloat32(value: number): void {
    this.reserve(4);
    this.view.setFloat32(this.length, value, true);
    this.length += 4;
  }

  /** An int32 count, then each value as a float32. */
  writeFloat32List(values: ArrayLike<number>): void {
    this.writeInt32(values.length);
    this.reserve(values.length * 4);
    for (let i = 0; i < values.length; i++) {
      this.view.setFloat32(this.length, values[i], true);
      this.length += 4;
    }
  }

  /** An int32 byte length, then the ASCII bytes. */
  writeString(value: string): void {
    for (let i = 0; i < value.length; i++) {
      if (value.charCodeAt(i) > 0x7f) {
        throw new Error(
          `OutgoingMessage.writeString: ${JSON.stringify(value)} is not ASCII ` +
            `(character ${i}); side-channel strings are ASCII on both sides`,
        );
      }
    }
    this.writeInt32(value.length);
    this.reserve(value.length);
    this.bytes.set(Buffer.from(value, 'latin1'), this.length);
    this.length += value.length;
  }

  /** Appends bytes as they are, with no length prefix. */
  writeRawBytes(data: Uint8Array): void {
    this.reserve(data.byteLength);
    this.bytes.set(data, this.length);
    this.length += data.byteLength;
  }

  /** Replaces everything written so far with a copy of `data` (upstream's set_raw_bytes). */
  setRawBytes(data: Uint8Array): void {
    this.length = 0;
    this.writeRawBytes(data);
  }

  private reserve(extra: number): void {
    const needed = this.length + extra;
    if (needed <= this.bytes.byteLength) return;
    let capacity = this.bytes.byteLength * 2;
    while (capacity < needed) capacity *= 2;
    const grown = new Uint8Array(capacity);
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
    this.view = new DataView(grown.buffer);
  }
}
