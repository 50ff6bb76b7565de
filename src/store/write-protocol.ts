// What the store's main thread and its writer threads say to each other. A batch
// carries one upload's operations in tar order plus one buffer holding, back to
// back, the bytes of every `file` and `append` in it.

export type WriteOp =
  | { k: 'dir'; path: string }
  /** A whole small file: the next `len` bytes of the batch's data. */
  | { k: 'file'; path: string; mode: number; len: number }
  /** Start a large file; `append`s follow, then `close`, possibly over several batches. */
  | { k: 'open'; path: string; mode: number }
  | { k: 'append'; len: number }
  | { k: 'close' }
  | { k: 'symlink'; path: string; target: string }
  | { k: 'link'; path: string; target: string };

export interface WriteBatch {
  job: number;
  seq: number;
  /** On a job's first batch: the empty directory to fill, and whether to chmod after create. */
  start?: { root: string; fixModes: boolean };
  ops: WriteOp[];
  /** The batch's bytes from offset 0 (a pooled buffer may be longer); moved, not copied. */
  data: ArrayBuffer;
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
