/** oslo.messaging's notification format (messaging v2 envelope), as Blazar sends it. */

export interface OutboxRow {
  id: string;
  message_id: string;
  event_type: string;
  payload: Record<string, unknown>;
  created_at: Date;
}

export interface Envelope {
  'oslo.version': '2.0';
  'oslo.message': string;
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** oslo's notification timestamp: UTC, `YYYY-MM-DD HH:MM:SS.ffffff`. */
export function osloTimestamp(at: Date): string {
  return (
    `${at.getUTCFullYear()}-${pad(at.getUTCMonth() + 1)}-${pad(at.getUTCDate())} ` +
    `${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())}:${pad(at.getUTCSeconds())}.` +
    `${pad(at.getUTCMilliseconds(), 3)}000`
  );
}

/** The message body: the notification as a JSON string inside the envelope. */
export function envelope(row: OutboxRow, publisherId: string): Envelope {
  const message = {
    message_id: row.message_id,
    publisher_id: publisherId,
    event_type: row.event_type,
    priority: 'INFO',
    payload: row.payload,
    timestamp: osloTimestamp(row.created_at),
  };
  return { 'oslo.version': '2.0', 'oslo.message': JSON.stringify(message) };
}
