import { connect, type ChannelModel, type ConsumeMessage } from 'amqplib';

/** The machine's RabbitMQ. */
export const BROKER = 'amqp://guest:guest@127.0.0.1:5672';

/**
 * Listens for what Climate publishes on `topic` (routing key `<topic>.info` on the
 * `openstack` exchange), through an exclusive queue of this test's own.
 */
export async function consumeNotifications(
  topic: string,
  onMessage: (msg: ConsumeMessage) => void,
): Promise<ChannelModel> {
  const consumer = await connect(BROKER);
  const channel = await consumer.createChannel();
  await channel.assertExchange('openstack', 'topic', { durable: true });
  const { queue } = await channel.assertQueue('', { exclusive: true });
  await channel.bindQueue(queue, 'openstack', `${topic}.info`);
  await channel.consume(queue, (msg) => msg !== null && onMessage(msg), { noAck: true });
  return consumer;
}
