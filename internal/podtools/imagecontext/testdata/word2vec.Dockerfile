# Written by `paddlejob image context`.
# Build: docker build -t yancey1989/paddle-job <this directory>
FROM paddlepaddle/paddle
COPY package/ /example/
WORKDIR /example
ENTRYPOINT ["python", "train.py"]
