// Compiler arguments a tree may not give clangd. A compile command names what
// clang's driver reads and loads: a plugin (-fplugin=, -Xclang -load), a
// response file (@file, whose contents are more arguments), a configuration file
// (--config, or one found beside a driver named by path), a toolchain or program
// directory (-B, --gcc-toolchain), another mode of the driver (--driver-mode,
// -cc1). clangd 14 does not load plugins itself, but nothing here relies on
// that: every such argument is removed from compile_flags.txt and from a copied
// compile_commands.json (both its `arguments` and its `command`), and the driver
// is cut to a bare compiler name so nothing is looked up beside a path the tree
// chose. Flags that only choose headers or macros (-I, -D, -include, --sysroot)
// stay: inside the jail they can only name what the jail already shows.

/** Removed with the argument after them (when it is separate). */
const WITH_NEXT = new Set([
  '-load',
  '-plugin',
  '-add-plugin',
  '-mllvm',
  '--config',
  '--config-system-dir',
  '--config-user-dir',
  '-B',
  '--prefix',
  '--gcc-toolchain',
  '-gcc-toolchain',
  '--gcc-install-dir',
  '-ccc-install-dir',
  '-ccc-gcc-name',
  '-specs',
  '--specs',
  '--ld-path',
]);

/** Removed when an argument starts with one of these (the value joined to it). */
const PREFIXES = [
  '-fplugin', // -fplugin=, -fplugin-arg-<name>-<arg>
  '-fpass-plugin',
  '-load=',
  '-plugin=',
  '-add-plugin=',
  '-mllvm=',
  '--config=',
  '--config-',
  '--prefix=',
  '--gcc-toolchain=',
  '-gcc-toolchain=',
  '--gcc-install-dir=',
  '-ccc-',
  '-specs=',
  '--specs=',
  '--driver-mode',
  '-Wp,', // preprocessor (cc1) arguments, comma separated: -Wp,-load,x.so
  '-fuse-ld=',
  '--ld-path=',
  '-B',
];

/** cc1 options: `-plugin-arg-<name> <arg>`. */
const PLUGIN_ARG = '-plugin-arg-';

/** Is this argument one a tree may not give (and does it take the next with it)? */
function refused(arg: string): { next: boolean } | undefined {
  if (arg.startsWith('@')) return { next: false }; // a response file: more arguments, read from the tree
  if (arg === '-cc1' || arg === '-cc1as') return { next: false };
  if (arg.startsWith('-X')) {
    // -Xclang <arg>, -Xpreprocessor <arg>, -Xarch_<arch> <arg>, -Xopenmp-target[=<triple>] <arg>, …:
    // each hands its argument to another stage. A joined -Xclang=<arg> carries it along.
    const joined = arg.includes('=') && !arg.startsWith('-Xopenmp-target=');
    return { next: !joined };
  }
  if (WITH_NEXT.has(arg)) return { next: true };
  if (arg.startsWith(PLUGIN_ARG)) return { next: true };
  for (const p of PREFIXES) if (arg.startsWith(p)) return { next: false };
  return undefined;
}

export interface FilteredArgs {
  args: string[];
  /** What was removed, in order (for the note answers carry). */
  removed: string[];
}

/** `args` without the arguments a tree may not give (flags only: no driver in front). */
export function filterFlags(args: readonly string[]): FilteredArgs {
  const out: string[] = [];
  const removed: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const r = refused(a);
    if (!r) {
      out.push(a);
      continue;
    }
    removed.push(a);
    if (r.next && i + 1 < args.length) removed.push(args[++i]!);
  }
  return { args: out, removed };
}

// The driver names clangd may see: a compiler's bare name, with a version suffix
// at most (clang++-14). A target prefix (arm-none-eabi-gcc) is taken off and given
// as --target: clang's driver deduces a config file from a prefixed name and looks
// for it beside the driver, which for a name not on the jail's PATH is the
// working directory, i.e. the tree.
const DRIVER = /^(?:(.+)-)?(clang|clang\+\+|gcc|g\+\+|cc|c\+\+)(-\d+(?:\.\d+)*)?$/;
/** What a target prefix must look like to be kept as --target (a triple, not a path or a flag). */
const TRIPLE = /^[a-z0-9_]+(?:-[a-z0-9_.]+){1,3}$/;
/** Compiler launchers: the compiler is their first argument. */
const LAUNCHERS = new Set(['ccache', 'sccache', 'distcc', 'icecc']);

const basename = (p: string) => p.slice(p.lastIndexOf('/') + 1);

/**
 * A whole compile command (driver first) made safe: launchers dropped, the driver
 * cut to its bare name when it is a known compiler (else `clang`/`clang++` for the
 * file's language), then the flags filtered. clangd finds a bare name on the jail's
 * PATH only, never beside a path the tree chose.
 */
export function filterCommand(argv: readonly string[], cxx: boolean): FilteredArgs {
  let i = 0;
  while (i < argv.length - 1 && LAUNCHERS.has(basename(argv[i]!))) i++;
  const given = argv[i] ?? '';
  const m = DRIVER.exec(basename(given));
  const driver = m ? m[2]! + (m[3] ?? '') : cxx ? 'clang++' : 'clang';
  const target = m?.[1] !== undefined && TRIPLE.test(m[1]) ? [`--target=${m[1]}`] : [];
  const rest = filterFlags(argv.slice(i + 1));
  // A launcher, a path or a target prefix around a compiler's name is only
  // rewritten; a driver that is no known compiler is replaced, and that is said.
  const removed = [...(m && (m[1] === undefined || target.length) ? [] : [given]), ...rest.removed];
  return { args: [driver, ...target, ...rest.args], removed };
}

/**
 * A compile database's `command` string split as clang's GNU tokenizer does:
 * whitespace separates, single quotes are literal, double quotes group with
 * backslash escapes, a backslash outside quotes escapes the next character. The
 * result goes back to clangd as `arguments`, so clangd never splits it itself:
 * what was filtered is exactly what it gets.
 */
export function splitCommand(command: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inToken = false;
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      if (inToken) out.push(cur);
      cur = '';
      inToken = false;
      continue;
    }
    inToken = true;
    if (c === '\\' && i + 1 < command.length) {
      cur += command[++i];
    } else if (c === "'") {
      const end = command.indexOf("'", i + 1);
      const stop = end < 0 ? command.length : end;
      cur += command.slice(i + 1, stop);
      i = stop;
    } else if (c === '"') {
      for (i++; i < command.length && command[i] !== '"'; i++) {
        if (command[i] === '\\' && i + 1 < command.length) i++;
        cur += command[i];
      }
    } else {
      cur += c;
    }
  }
  if (inToken) out.push(cur);
  return out;
}
