// What the store's main thread and its writer threads say to each other. A batch
// is one buffer of records, one per operation, in tar order, each followed by its
// data: encoding them as bytes (not objects) keeps the hand-over to a copy into a
// reusable buffer and a move, with nothing to clone and no garbage per entry.
//
// Record: u8 op, then per op (integers little-endian, strings UTF-8 with a u32 length):
//   DIR      path
//   FILE     u16 mode, path, u32 len, len bytes        a whole small file
//   OPEN     u16 mode, f64 size, path                  a large file; APPENDs and CLOSE follow
//   APPEND   u32 len, len bytes
//   CLOSE
//   SYMLINK  path, target
//   LINK     path, target                              target: a path already written
//   LINKIN   path                                      hard link <base>/path (the job's base tree) to path
//   COPYROOM f64 bytes, u32 block                      what LINKINs that must copy may take in all (before them)
//
// FILE, CLOSE and SYMLINK each yield the git blob id of what they wrote (git-tree.ts),
// answered 20 bytes apiece in record order with the batch that completed them.
// A LINKIN that cannot link (EMLINK, EXDEV) copies, and only within its COPYROOM:
// a copy that would pass it fails the job with COPY_ROOM_CODE before a byte is copied.

// write-worker.js repeats these codes (it imports nothing of ours).
export const Op = { Dir: 1, File: 2, Open: 3, Append: 4, Close: 5, Symlink: 6, Link: 7, LinkIn: 8, CopyRoom: 9 } as const;

/** The error code of a LINKIN copy refused for want of room (write-worker.js repeats it). */
export const COPY_ROOM_CODE = 'ELSPD_COPY_ROOM';

export interface WriteBatch {
  job: number;
  seq: number;
  /**
   * On a job's first batch: the empty directory to fill, whether to chmod after
   * create, and the stored tree LINKIN records link from (an incremental upload).
   */
  start?: { root: string; fixModes: boolean; base?: string };
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
  /** Blob ids (20 bytes each) of the FILE, CLOSE and SYMLINK records this batch completed, in order. */
  digests?: ArrayBuffer;
  /** Disk the job's LINKIN copies took so far (whole blocks), when any did. */
  copiedBytes?: number;
}

/** Bytes a string takes as a record field. */
export const strBytes = (s: string): number => 4 + Buffer.byteLength(s);
