// What the store's main thread and its writer threads say to each other. A batch
// is one buffer of records, one per operation, in tar order, each followed by its
// data: encoding them as bytes (not objects) keeps the hand-over to a copy into a
// reusable buffer and a move, with nothing to clone and no garbage per entry.
//
// Record: u8 op, then per op (integers little-endian, strings UTF-8 with a u32 length):
//   DIR      path
//   FILE     u16 mode, path, u32 len, len bytes        a whole small file
//   OPEN     u16 mode, path                            a large file; APPENDs and CLOSE follow
//   APPEND   u32 len, len bytes
//   CLOSE
//   SYMLINK  path, target
//   LINK     path, target                              target: a path already written

// write-worker.js repeats these codes (it imports nothing of ours).
export const Op = { Dir: 1, File: 2, Open: 3, Append: 4, Close: 5, Symlink: 6, Link: 7 } as const;

export interface WriteBatch {
  job: number;
  seq: number;
  /** On a job's first batch: the empty directory to fill, and whether to chmod after create. */
  start?: { root: string; fixModes: boolean };
  /** Records from offset 0 to `bytes` (a pooled buffer is longer); moved, not copied. */
  data: ArrayBuffer;
  bytes: number;
  /** The job's last batch: close what is open and forget the job. */
  end?: boolean;
}

export interface WriteReply {
  job: number;
  seq: number;
  /** The job's first failure; every later batch of the job is skipped and answers it again. */
  error?: { code?: string; message: string };
  /** The batch's buffer, moved back for reuse. */
  data: ArrayBuffer;
}

/** Bytes a string takes as a record field. */
export const strBytes = (s: string): number => 4 + Buffer.byteLength(s);
