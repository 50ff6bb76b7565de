// The one error a state machine here throws when asked for a transition its table
// does not allow (a session's, a fetch job's): a bug in lspd, never a user's doing.
export class IllegalTransition extends Error {
  override name = 'IllegalTransition';
  constructor(machine: string, from: string, to: string) {
    super(`${machine}: illegal transition ${from} -> ${to}`);
  }
}
