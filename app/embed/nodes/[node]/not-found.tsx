import { NotFoundMessage } from '../../../../components/not-found-message.tsx';

export default function EmbedItemNotFound() {
  return <NotFoundMessage level="item" />;
}
