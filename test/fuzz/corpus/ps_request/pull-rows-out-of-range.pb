
emb
