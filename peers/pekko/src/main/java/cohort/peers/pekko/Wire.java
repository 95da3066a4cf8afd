package cohort.peers.pekko;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.ByteBufferSerializer;
import org.apache.pekko.serialization.SerializerWithStringManifest;

/**
 * The remote ping-pong's messages and their serializer: a hand-written binary one (a ping or a
 * pong is its 8-byte timestamp), bound in the configuration, with the ByteBuffer variant Artery
 * uses to skip a copy, as Pekko's documentation advises for hot messages.
 */
final class Wire {
  private Wire() {}

  /** Every message that crosses the wire. */
  interface Msg {}

  /** A client introduces itself to its echo actor once, before its pings. */
  record Hello(ActorRef<Pong> client) implements Msg {}

  /** A ping: when it was sent, on the client's clock. */
  record Ping(long sentNs) implements Msg {}

  /** The echo of a ping. */
  record Pong(long sentNs) implements Msg {}

  /** Serializes {@link Msg}s. */
  public static final class Serializer extends SerializerWithStringManifest
      implements ByteBufferSerializer {
    private final ExtendedActorSystem system;

    public Serializer(ExtendedActorSystem system) {
      this.system = system;
    }

    @Override
    public int identifier() {
      return 740_031;
    }

    @Override
    public String manifest(Object o) {
      if (o instanceof Ping) {
        return "P";
      } else if (o instanceof Pong) {
        return "Q";
      } else if (o instanceof Hello) {
        return "H";
      }
      throw new IllegalArgumentException("cannot serialize " + o.getClass());
    }

    private byte[] helloBytes(Hello h) {
      return ActorRefResolver.get(Adapter.toTyped(system))
          .toSerializationFormat(h.client())
          .getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public byte[] toBinary(Object o) {
      ByteBuffer b = ByteBuffer.allocate(o instanceof Hello h ? helloBytes(h).length : 8);
      toBinary(o, b);
      return b.array();
    }

    @Override
    public void toBinary(Object o, ByteBuffer buf) {
      if (o instanceof Ping p) {
        buf.putLong(p.sentNs());
      } else if (o instanceof Pong p) {
        buf.putLong(p.sentNs());
      } else if (o instanceof Hello h) {
        buf.put(helloBytes(h));
      } else {
        throw new IllegalArgumentException("cannot serialize " + o.getClass());
      }
    }

    @Override
    public Object fromBinary(byte[] bytes, String manifest) {
      return fromBinary(ByteBuffer.wrap(bytes), manifest);
    }

    @Override
    public Object fromBinary(ByteBuffer buf, String manifest) {
      switch (manifest) {
        case "P":
          return new Ping(buf.getLong());
        case "Q":
          return new Pong(buf.getLong());
        case "H":
          byte[] b = new byte[buf.remaining()];
          buf.get(b);
          return new Hello(ActorRefResolver.get(Adapter.toTyped(system))
              .resolveActorRef(new String(b, StandardCharsets.UTF_8)));
        default:
          throw new IllegalArgumentException("unknown manifest " + manifest);
      }
    }
  }
}
