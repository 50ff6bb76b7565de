// The media types a tree upload may be sent as, declared once: the server's body
// parser lets exactly these through as a stream, and the route tells tar from gzip
// by them.
export const TAR_MEDIA: ReadonlySet<string> = new Set(['application/x-tar', 'application/tar', 'application/octet-stream']);
export const GZIP_MEDIA: ReadonlySet<string> = new Set(['application/gzip', 'application/x-gzip']);
export const UPLOAD_MEDIA: readonly string[] = [...TAR_MEDIA, ...GZIP_MEDIA];
