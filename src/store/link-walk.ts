// Resolves symlink targets through the symlinks of one upload, the way the kernel
// would (path_resolution(7)), in work linear in the bytes of the tar.
//
// Why not the obvious walk: a stack of names joined into a key for every segment,
// and a link's target re-expanded at every hop, costs (segments × depth) per hop
// and (hops × target) per link: 40 chained links with targets a few hundred
// segments long (a 1 KB gzip'd tar) held the event loop for seconds. Here:
// - only symlinks and their ancestors are interned, as a trie; a position is a
//   trie node plus how many names deeper it is below it (names that are no link
//   and lead to no link are walked lexically, as the kernel's answer would not
//   depend on them), so one segment is one map lookup and nothing is ever joined;
// - a link's resolution from its own directory does not depend on how it was
//   reached, so it is memoised (where it lands and how many hops it took) and
//   reused at every later encounter; the memos last until a link is added where a
//   memoised walk passed while it was no link (which would change that walk);
// - a link's target is kept as the one string the header brought and read a
//   segment at a time as it is walked, never split into an array held for the
//   upload's life: 20,000 links with targets of a few thousand short segments
//   held 541 MiB of split strings that way (issue 30), against the ~60 MB the
//   targets themselves are;
// - every segment walked and every link met is a step, counted (`steps`), and the
//   caller refuses the upload past a budget, so even a tar built to defeat the
//   memo costs a bounded, linear amount of work.

/** The kernel gives up after 40 symlinks in one lookup (ELOOP, path_resolution(7)). */
export const MAX_LINK_HOPS = 40;

/** Why a resolution refuses its link. */
export type WalkRefusal = 'symlink target leaves the root' | 'symlink loop' | 'budget';

interface Node {
  readonly parent: Node | null;
  children: Map<string, Node> | undefined;
  /** The link's target as the header gave it, when this node is a symlink (walked a segment at a time). */
  target: string | undefined;
  absolute: boolean;
  /** Where resolving this link from its own directory lands; valid while `memoEpoch` is the walker's epoch. */
  memo: Landing | undefined;
  memoEpoch: number;
  /** On the walk's frame stack now (a link met again while resolving itself loops forever). */
  active: boolean;
  /**
   * Names below this node that a memoised walk passed through while they were no
   * link (valid while `missedEpoch` is the walker's epoch): a link added at one of
   * them would change those walks, so adding it ends every memo.
   */
  missed: Set<string> | undefined;
  missedEpoch: number;
}

/**
 * Where a walk ended: `depth` unknown names below `node`, after meeting `hops`
 * links. Only walks that stay inside are memoised: any other outcome refuses the
 * whole upload, so it is never needed again.
 */
interface Landing {
  node: Node;
  depth: number;
  hops: number;
}

/** One link's target being walked (or, at the bottom, the target being checked). */
interface Frame extends Landing {
  /** The link being resolved; null for a target being checked before its link is added. */
  link: Node | null;
  /** The target being walked, and where its next segment starts (past its end when every segment was walked). */
  text: string;
  pos: number;
}

function newNode(parent: Node | null): Node {
  return { parent, children: undefined, target: undefined, absolute: false, memo: undefined, memoEpoch: -1, active: false, missed: undefined, missedEpoch: -1 };
}

export class LinkWalker {
  private readonly root = newNode(null);
  private epoch = 0;
  /** Segments walked and links met, over every resolution so far: the work done. */
  steps = 0;

  /** @param budget steps allowed so far (asked before each step: it may grow as headers arrive). */
  constructor(private readonly budget: () => number) {}

  /** Record a symlink at `path` (normalized, root-relative, its ancestors no links). */
  add(path: string, target: string): void {
    let node = this.root;
    let fresh = false;
    for (const seg of path.split('/')) {
      node.children ??= new Map();
      let child = node.children.get(seg);
      if (!child) {
        // The first name of the path that is new here: did a memoised walk pass through it?
        if (!fresh && node.missedEpoch === this.epoch && node.missed!.has(seg)) this.epoch++;
        fresh = true;
        node.children.set(seg, (child = newNode(node)));
      }
      node = child;
    }
    node.target = target;
    node.absolute = target.startsWith('/');
  }

  /** A walk goes below `node` through `seg`, which is no link and leads to none (now). */
  private miss(node: Node, seg: string): void {
    if (node.missedEpoch !== this.epoch) {
      node.missed = new Set();
      node.missedEpoch = this.epoch;
    }
    node.missed!.add(seg);
  }

  /** Resolve the link recorded at `path`; why it is refused, or undefined when it stays inside. */
  check(path: string): WalkRefusal | undefined {
    const { node, depth } = this.locate(path);
    if (depth !== 0 || !node.target) throw new Error(`link-walk: no link at ${path}`);
    return this.walk({ link: node, text: node.target, pos: 0, node: node.parent!, depth: 0, hops: 0 });
  }

  /** Resolve `target` as if it were a link at `path` not yet recorded (the link itself is not met). */
  checkTarget(path: string, target: string): WalkRefusal | undefined {
    const i = path.lastIndexOf('/');
    const at = this.locate(i < 0 ? '' : path.slice(0, i));
    return this.walk({ link: null, text: target, pos: 0, node: at.node, depth: at.depth, hops: 0 });
  }

  /** The trie node nearest `dir` and how many names below it `dir` is. */
  private locate(dir: string): { node: Node; depth: number } {
    let node = this.root;
    let depth = 0;
    if (dir === '') return { node, depth };
    for (const seg of dir.split('/')) {
      if (depth > 0) depth++;
      else {
        const child = node.children?.get(seg);
        if (child) node = child;
        else depth = 1;
      }
    }
    return { node, depth };
  }

  /**
   * The kernel's walk, with each link's target walked in a frame of its own (a
   * stack, not recursion: chains can be as long as the tar is). `total` is the
   * kernel's count of links met in the whole lookup; each frame's `hops` counts
   * those met inside it, which is what its memo keeps.
   */
  private walk(bottom: Frame): WalkRefusal | undefined {
    const frames: Frame[] = [bottom];
    if (bottom.link) bottom.link.active = true;
    let total = 0;
    // Headers do not arrive during a walk: the budget is fixed for its length.
    const budget = this.budget();
    try {
      for (;;) {
        const f = frames[frames.length - 1]!;
        if (f.pos > f.text.length) {
          // This link's target is walked: memoise where it lands; its caller goes on from there.
          frames.pop();
          if (f.link) {
            f.link.active = false;
            f.link.memo = { node: f.node, depth: f.depth, hops: f.hops };
            f.link.memoEpoch = this.epoch;
          }
          const caller = frames[frames.length - 1];
          if (!caller) return undefined;
          caller.node = f.node;
          caller.depth = f.depth;
          caller.hops += f.hops;
          continue;
        }
        if (++this.steps > budget) return 'budget';
        const seg = nextSegment(f);
        if (seg === '' || seg === '.') continue;
        if (seg === '..') {
          if (f.depth > 0) f.depth--;
          else if (f.node.parent) f.node = f.node.parent;
          else return 'symlink target leaves the root';
          continue;
        }
        if (f.depth > 0) {
          f.depth++; // below a name that leads to no link: nothing here is one
          continue;
        }
        const child = f.node.children?.get(seg);
        if (!child) {
          // Only memoised walks need to know what they passed: the bottom one of checkTarget is not.
          if (f.link) this.miss(f.node, seg);
          f.depth = 1;
        } else if (!child.target) f.node = child;
        else if (child.absolute) return 'symlink target leaves the root';
        else {
          f.hops++;
          if (++total > MAX_LINK_HOPS || child.active) return 'symlink loop';
          const m = child.memoEpoch === this.epoch ? child.memo : undefined;
          if (m) {
            // The memoised walk met m.hops links on its way: the lookup loops if they take it past the limit.
            total += m.hops;
            if (total > MAX_LINK_HOPS) return 'symlink loop';
            f.node = m.node;
            f.depth = m.depth;
            f.hops += m.hops;
          } else {
            child.active = true;
            frames.push({ link: child, text: child.target, pos: 0, node: child.parent!, depth: 0, hops: 0 });
          }
        }
      }
    } finally {
      for (const f of frames) if (f.link) f.link.active = false;
    }
  }
}

/** The frame's next segment (as `text.split('/')` would give them, '' included), advancing past it. */
function nextSegment(f: Frame): string {
  const end = f.text.indexOf('/', f.pos);
  const stop = end < 0 ? f.text.length : end;
  const seg = f.text.slice(f.pos, stop);
  f.pos = stop + 1;
  return seg;
}
