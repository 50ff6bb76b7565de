// Why a fetcher could not get a package from its registry, from what the tool
// printed. Every fetcher reaches a registry only through the egress proxy
// (src/jail/egress-proxy.ts), whose status codes keep the causes apart: 403 the
// host is not in LSPD_FETCH_REGISTRIES, 502 it refused the connection or did not
// resolve, 504 it accepted none in time. The tools print the status of a proxy's
// answer (npm "502 Bad Gateway - GET …", pip "Tunnel connection failed: 403
// Forbidden" for CONNECT, "403 Client Error" for a plain-http index), so the codes
// are read first; the tools' own words come after. One table for every ecosystem,
// so npm and pip never again disagree on what a 403 or a 502 means (pip's hint once
// took any failed tunnel for a host not allowed).

export type RegistryFailure = 'not_allowed' | 'timed_out' | 'unreachable' | 'not_found' | 'integrity';

export const registryReasons: Record<RegistryFailure, string> = {
  not_allowed: 'the registry host is not an allowed registry (not in LSPD_FETCH_REGISTRIES): the egress proxy refused it.',
  timed_out: 'the registry host did not answer in time.',
  unreachable: 'the registry host could not be reached (connection refused or name not resolved).',
  not_found: 'a locked package was not found in the registry (404).',
  integrity: 'a downloaded package does not match the hash in the lockfile.',
};

const patterns: [RegistryFailure, RegExp][] = [
  ['integrity', /EINTEGRITY|integrity checksum failed|DO NOT MATCH THE HASHES|do not match the hashes|checksum mismatch|SECURITY ERROR/],
  ['not_allowed', /\b403\b[^\n]*Forbidden|Forbidden[^\n]*\b403\b|403 Client Error|is not an allowed fetch registry|\bE403\b/],
  ['timed_out', /\b504\b|Gateway Time-?out|ETIMEDOUT|ESOCKETTIMEDOUT|Read timed out|timed out|did not answer within/],
  [
    'unreachable',
    /\b502\b|Bad Gateway|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|Connection refused|Failed to establish a new connection|Name or service not known|Tunnel connection failed|ProxyError|Max retries exceeded/,
  ],
  ['not_found', /\bE404\b|\b404\b[^\n]*Not Found|404 Client Error|Not Found for url/],
];

/** The first registry failure the output shows, in the order above (a 403 in a retry storm of 502s is still a 403). */
export function registryFailure(output: string): RegistryFailure | undefined {
  for (const [kind, re] of patterns) if (re.test(output)) return kind;
  return undefined;
}

/** The caller's sentence for it, or undefined when the output shows no registry failure. */
export function registryReason(output: string): string | undefined {
  const k = registryFailure(output);
  return k && registryReasons[k];
}
