"""Sentence vectors from a pretrained model: not available on an offline server."""
from __future__ import annotations

from apps.graphs.nodes.base import NodeError, Param, Port
from apps.graphs.nodes.library._helpers import LibraryNode

MODELS = {"multilingual": "minishlab/potion-multilingual-128M",
          "english-small": "minishlab/potion-base-8M"}


class SentenceEmbedding(LibraryNode):
    type = "edu:SentenceEmbedding"
    category = "EDU"
    description = "Not available offline: turns a sentence into one meaning vector with a downloaded model."
    details = (
        "In CodefyUI this node turns a sentence into one vector whose direction carries its "
        "meaning, so sentences that mean the same point the same way (even across "
        "languages). It needs a pretrained model2vec model ('multilingual' is "
        "minishlab/potion-multilingual-128M, 'english-small' is minishlab/potion-base-8M) "
        "downloaded from the internet on first use. This server works offline and downloads "
        "nothing, so the node loads with its graph but refuses to run. To see how words "
        "become vectors here, use foundations:Edu-TokenEmbedding."
    )
    inputs = (Port("text", "STRING", optional=True),)
    outputs = (Port("embedding"),)
    params = (
        Param("model", "select", "multilingual", "Which pretrained model", options=tuple(MODELS)),
        Param("text", "string", "", "The sentence, when nothing is wired into 'text'"),
    )
    cacheable = False

    def run(self, ctx, params, text=None):
        raise NodeError(f"SentenceEmbedding is not available on this server: it needs the "
                        f"pretrained model {MODELS[params['model']]} (and the model2vec package) "
                        "downloaded from the internet, and this server works offline. Use "
                        "foundations:Edu-TokenEmbedding to turn words into vectors instead.")
