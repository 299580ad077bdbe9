import { Result } from 'pg';
import { prepareValue } from 'pg/lib/utils';

/** The part of node-postgres's Connection a statement is written with. */
export interface WireConnection {
  stream: { cork?: () => void; uncork?: () => void };
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  parse(query: { text: string; name?: string }, more?: boolean): void;
  bind(config: object, more?: boolean): void;
  describe(config: { type: 'P'; name: string }, more?: boolean): void;
  execute(config: object, more?: boolean): void;
  sync(): void;
  sendCopyFail(message: string): void;
}

export interface Statement {
  /** A prepared statement's name; without one the statement is parsed each time. */
  name?: string;
  text: string;
  values: unknown[];
}

export interface Frame {
  begin: boolean;
  commit: boolean;
}

export interface FramedResult {
  rows: unknown[];
  rowCount: number;
}

type Phase = 'sending' | 'begin' | 'statement' | 'commit' | 'done';

/** node-postgres's Result, as its own Query fills it (rows parsed by the field types). */
interface Rows {
  rows: unknown[];
  rowCount: number | null;
  addFields(fields: unknown[]): void;
  parseRow(fields: unknown[]): unknown;
  addCommandComplete(msg: object): void;
}

/**
 * One statement with BEGIN before it and/or COMMIT after it, written at once and answered
 * in one round trip: the extended protocol runs the messages before a Sync in order, and
 * after an error skips to the Sync, so a failed statement never reaches the COMMIT (the
 * transaction is then left failed, for the caller's ROLLBACK). A node-postgres Submittable:
 * the client sends nothing else on the connection until the Sync is answered.
 */
export class FramedStatement {
  readonly done: Promise<FramedResult>;
  private settle!: { resolve: (r: FramedResult) => void; reject: (e: Error) => void };
  private phase: Phase = 'sending';
  private readonly result = new Result('object', undefined as never) as unknown as Rows;
  private failure: Error | undefined;
  private connection: WireConnection | undefined;

  constructor(
    private readonly statement: Statement,
    readonly frame: Frame,
  ) {
    this.done = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
  }

  /**
   * Read by the client when a Parse completes, to record the prepared statement: only the
   * statement's own Parse may be recorded, not BEGIN's or COMMIT's (unnamed) ones.
   */
  get name(): string | undefined {
    return this.phase === 'sending' || this.phase === 'statement' ? this.statement.name : undefined;
  }

  get text(): string {
    return this.statement.text;
  }

  /**
   * Writes the frame, or returns the error of a value that cannot be sent, before writing
   * anything: the client then fails the statement and goes on (a frame cut short would
   * leave the server waiting for its Sync and the client for the answer).
   */
  submit(connection: WireConnection): Error | null {
    this.connection = connection;
    const { name, text } = this.statement;
    let values: unknown[];
    try {
      values = this.statement.values.map((v) => prepareValue(v));
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
    connection.stream.cork?.();
    try {
      if (this.frame.begin) plain(connection, 'BEGIN');
      const parsed =
        name !== undefined &&
        (connection.parsedStatements[name] !== undefined ||
          connection.submittedNamedStatements[name] !== undefined);
      if (!parsed) {
        connection.parse({ text, name }, true);
        if (name !== undefined) connection.submittedNamedStatements[name] = text;
      }
      connection.bind({ statement: name ?? '', values }, true);
      connection.describe({ type: 'P', name: '' }, true);
      connection.execute({}, true);
      if (this.frame.commit) plain(connection, 'COMMIT');
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    this.phase = this.frame.begin ? 'begin' : 'statement';
    return null;
  }

  handleRowDescription(msg: { fields: unknown[] }): void {
    if (this.phase === 'statement') this.result.addFields(msg.fields);
  }

  handleDataRow(msg: { fields: unknown[] }): void {
    if (this.phase !== 'statement' || this.failure !== undefined) return;
    try {
      this.result.rows.push(this.result.parseRow(msg.fields));
    } catch (error) {
      this.failure = error as Error;
    }
  }

  handleCommandComplete(msg: object): void {
    if (this.phase === 'begin') {
      this.phase = 'statement';
    } else if (this.phase === 'statement') {
      this.result.addCommandComplete(msg);
      this.phase = this.frame.commit ? 'commit' : 'done';
    } else {
      this.phase = 'done';
    }
  }

  handleEmptyQuery(): void {
    this.handleCommandComplete({});
  }

  /** A server error (the Sync's answer follows) or the connection's end (nothing follows). */
  handleError(error: Error): void {
    const name = this.statement.name;
    const connection = this.connection;
    if (name !== undefined && connection !== undefined && !(name in connection.parsedStatements)) {
      delete connection.submittedNamedStatements[name];
    }
    this.failure ??= error;
    this.settle.reject(this.failure);
  }

  handleReadyForQuery(): void {
    if (this.failure !== undefined) this.settle.reject(this.failure);
    else this.settle.resolve({ rows: this.result.rows, rowCount: this.result.rowCount ?? 0 });
  }

  handlePortalSuspended(): void {}

  handleCopyInResponse(connection: WireConnection): void {
    connection.sendCopyFail('No source stream defined');
  }

  handleCopyData(): void {}
}

/** A parameterless statement in the extended protocol, with no row description. */
function plain(connection: WireConnection, text: string): void {
  connection.parse({ text }, true);
  connection.bind({}, true);
  connection.execute({}, true);
}
