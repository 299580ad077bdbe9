import { connect, type ChannelModel, type ConsumeMessage } from 'amqplib';

/** The machine's RabbitMQ. */
export const BROKER = 'amqp://guest:guest@127.0.0.1:5672';

/**
 * Listens for what Climate publishes on `topic` (routing key `<topic>.info` on `exchange`),
 * through an exclusive queue of this test's own. The exchange is declared as oslo.messaging
 * does, or taken as it is when it exists with other arguments.
 */
export async function consumeNotifications(
  topic: string,
  onMessage: (msg: ConsumeMessage) => void,
  exchange = 'openstack',
  url = BROKER,
): Promise<ChannelModel> {
  const consumer = await connect(url);
  consumer.on('error', () => undefined);
  const scratch = await consumer.createChannel();
  scratch.on('error', () => undefined);
  await scratch.assertExchange(exchange, 'topic', { durable: false }).then(
    () => scratch.close(),
    () => undefined,
  );
  const channel = await consumer.createChannel();
  const { queue } = await channel.assertQueue('', { exclusive: true });
  await channel.bindQueue(queue, exchange, `${topic}.info`);
  await channel.consume(queue, (msg) => msg !== null && onMessage(msg), { noAck: true });
  return consumer;
}
