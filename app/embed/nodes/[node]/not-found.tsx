import { NotFoundMessage } from '../../../../components/page/not-found-message.tsx';

export default function EmbedItemNotFound() {
  return <NotFoundMessage level="item" />;
}
