// The tree store's public face, as routes and the rest of lspd see it.
import type { Readable } from 'node:stream';
import type { RootKey } from '../schemas.js';
import type { Language } from '../languages.js';

export type { RootKey };

export interface RootInfo {
  root: RootKey;
  files: number;
  bytes: number;
  languages: Language[];
  /** ISO time the root became visible. */
  createdAt: string;
}

export interface PutOptions {
  /** The body is gzip'd (Content-Type application/gzip or Content-Encoding gzip). */
  gzip: boolean;
  signal?: AbortSignal;
}

export interface PutResult {
  created: boolean;
  info: RootInfo;
}

export function rootId(k: RootKey): string {
  return `${k.org}/${k.repo}/${k.sha}`;
}
