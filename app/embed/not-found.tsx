import { NotFoundMessage } from '../../components/page/not-found-message.tsx';

export default function EmbedNodeNotFound() {
  return <NotFoundMessage level="node" />;
}
