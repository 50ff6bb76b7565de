// The closed table of languages lspd knows, by file suffix. The store uses it to
// report a tree's `languages`; the server table (src/lsp/servers/server-table.ts) maps each
// language to the servers that can serve it. One table, so the two never disagree.

export const LANGUAGES = [
  'typescript',
  'javascript',
  'python',
  'go',
  'rust',
  'c',
  'cpp',
  'php',
  'shell',
  'java',
  'ruby',
  'svelte',
  'astro',
  'css',
  'scss',
  'less',
  'vue',
  'html',
] as const;
export type Language = (typeof LANGUAGES)[number];

export interface LanguageRow {
  language: Language;
  /** LSP languageId sent in didOpen; it moves with the suffix (.mjs is javascript). */
  languageId: string;
}

const rows: Record<string, LanguageRow> = {
  '.ts': { language: 'typescript', languageId: 'typescript' },
  '.mts': { language: 'typescript', languageId: 'typescript' },
  '.cts': { language: 'typescript', languageId: 'typescript' },
  '.tsx': { language: 'typescript', languageId: 'typescriptreact' },
  '.js': { language: 'javascript', languageId: 'javascript' },
  '.mjs': { language: 'javascript', languageId: 'javascript' },
  '.cjs': { language: 'javascript', languageId: 'javascript' },
  '.jsx': { language: 'javascript', languageId: 'javascriptreact' },
  '.py': { language: 'python', languageId: 'python' },
  '.pyi': { language: 'python', languageId: 'python' },
  '.go': { language: 'go', languageId: 'go' },
  '.rs': { language: 'rust', languageId: 'rust' },
  '.c': { language: 'c', languageId: 'c' },
  '.h': { language: 'c', languageId: 'c' },
  '.cc': { language: 'cpp', languageId: 'cpp' },
  '.cpp': { language: 'cpp', languageId: 'cpp' },
  '.cxx': { language: 'cpp', languageId: 'cpp' },
  '.hpp': { language: 'cpp', languageId: 'cpp' },
  '.hh': { language: 'cpp', languageId: 'cpp' },
  '.php': { language: 'php', languageId: 'php' },
  '.sh': { language: 'shell', languageId: 'shellscript' },
  '.bash': { language: 'shell', languageId: 'shellscript' },
  '.java': { language: 'java', languageId: 'java' },
  '.rb': { language: 'ruby', languageId: 'ruby' },
  '.vue': { language: 'vue', languageId: 'vue' },
  // Served as Angular templates only (the angular row needs the tree's @angular/core).
  '.html': { language: 'html', languageId: 'html' },
  '.svelte': { language: 'svelte', languageId: 'svelte' },
  '.astro': { language: 'astro', languageId: 'astro' },
  '.css': { language: 'css', languageId: 'css' },
  '.scss': { language: 'scss', languageId: 'scss' },
  '.less': { language: 'less', languageId: 'less' },
};

export function suffixOf(path: string): string {
  const base = path.slice(path.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot <= 0 ? '' : base.slice(dot).toLowerCase();
}

export function languageOf(path: string): LanguageRow | undefined {
  return rows[suffixOf(path)];
}

export const knownSuffixes: readonly string[] = Object.keys(rows);
