# Written by `paddlejob image context`.
# Build: docker build -t paddle-job <this directory>
FROM paddlepaddle/paddle
COPY package/ /
WORKDIR /
ENTRYPOINT ["sh", "-c", "exec python train.py --cfg=\"a b\" > /tmp/log 2>&1"]
