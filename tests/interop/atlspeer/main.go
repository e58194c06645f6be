// atlspeer: an independent aTLS endpoint written with Go's crypto/tls, configured the way
// Constellation's internal/atls does (spec §1), for interop tests of our BearSSL engine.
// Attestation uses the dummy variant (OID 1.3.9900.1.1): the document is Go's encoding/json
// of {UserData, Nonce []byte}.
//
//	atlspeer server [--issue] [--validate] [--critical-ext] [--no-alpn]
//	    listens on 127.0.0.1:0, prints "LISTEN <port>", serves one connection: reads "ping",
//	    answers "pong", prints "OK ..." or "ERR ..." and exits 0 or 1.
//	atlspeer client --addr HOST:PORT [--issue] [--validate] [--bad-sni] [--sni S] [--no-alpn] [--critical-ext]
//	    connects, sends "ping", expects "pong"; prints "OK ..." or "ERR ..."; exit 0 or 1.
//	atlspeer join-server [--fail]
//	    a JoinService-like grpc-go server (aTLS, dummy validator) on 127.0.0.1:0; prints
//	    "LISTEN <port>", serves one IssueJoinTicket (or answers Internal with --fail), prints
//	    "REQ <json>" for the request it got and exits.
//	atlspeer join-client --addr HOST:PORT --disk-uuid U
//	    a node-like grpc-go client (aTLS, dummy issuer); prints "OK <json>" of the response or
//	    "ERR <code> <message>"; exit 0 or 1.
//	    join-server also answers IssueRejoinTicket, checks the CSR and SSH key the way the
//	    JoinService does (spec §7), and takes --delay D (answer late) and --count N (serve N
//	    calls, for the bench).
//	atlspeer init-client --addr HOST:PORT --secret HEX
//	    the CLI's init step (spec §5.5): master secret and measurement salt all-zero, streams
//	    Init and enforces the CLI's stream semantics; prints "OK <json>" (cluster ID, kubeconfig)
//	    or "FAIL <json>" (error, log bytes, largest chunk) or "ERR <why>".
//	atlspeer recover-client --addr HOST:PORT
//	    the CLI's recover step with the all-zero master secret; "OK" or "ERR <code> <message>".
//	atlspeer bcrypt --secret HEX
//	    prints golang.org/x/crypto/bcrypt's hash of the raw secret (cost 10).
//	atlspeer metadata-client --addr http://HOST:PORT
//	    reads /self, /peers, /endpoint, /initsecrethash as Constellation's QEMU provider does;
//	    prints "OK <json>".
//	atlspeer verify-qemu --nonce HEX --doc FILE
//	    checks a qemu-vtpm document (spec §2.6) with Go's crypto: byte-identical to Go's
//	    encoding/json of the same values, the RSA AK, each quote's signature, magic, type,
//	    nonce, selection and PCR digest (SHA-512/384/256, first that passes); prints
//	    "OK user_data=<hex> pcr15=<hex>" or "ERR <why>".
//	atlspeer verify-ii --variant aws-nitro-tpm|gcp-sev-es --doc FILE [--source FILE]
//	    the document's InstanceInfo as Constellation's Go issuer makes it: decoded into the Go
//	    struct (aws-sdk-go-v2's imds.InstanceIdentityDocument, go-tpm-tools'
//	    attest.GCEInstanceInfo json tags) and encoded again byte-identical, and for AWS the
//	    same bytes as Go makes from the raw IMDS body in --source; prints "OK <json>".
//	atlspeer join-client --addr HOST:PORT --disk-uuid U --ca FILE
//	    the same with a Go-made CSR and ed25519 SSH key; the ticket's kubelet certificate is
//	    verified against FILE and its host certificate with x/crypto/ssh.
//	atlspeer init-server --hash FILE | recover-server --disk-uuid U
//	    the node's init and recovery servers in Go (aTLS with the dummy issuer), one call each;
//	    they print "LISTEN <port>", then "REQ <json>" with what they derived.
//	atlspeer join-bench --addr HOST:PORT --count N
//	    N sequential fresh connections, each one IssueJoinTicket; prints
//	    "BENCH median_us=... maxrss_kb=...".
package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/crypto/hkdf"
	"golang.org/x/crypto/ssh"

	"constelpeer/initproto"
	"constelpeer/joinproto"
	"constelpeer/recoverproto"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

var dummyOID = asn1.ObjectIdentifier{1, 3, 9900, 1, 1}
var qemuOID = asn1.ObjectIdentifier{1, 3, 9900, 5, 1}

type dummyDoc struct {
	UserData []byte
	Nonce    []byte
}

type options struct {
	issue, validate, criticalExt, badSNI, noALPN bool
	slashNonce                                   bool
	sni                                          string
}

func nonce() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}

// certificate makes the self-signed aTLS certificate of spec §1.4 for key, with the dummy
// attestation of (SHA-256(SPKI), peerNonce) when issue is set.
func certificate(key *ecdsa.PrivateKey, peerNonce []byte, o *options) (tls.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "Constellation"},
		NotBefore:    now.Add(-2 * time.Hour),
		NotAfter:     now.Add(2 * time.Hour),
	}
	if o.issue {
		spki, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			return tls.Certificate{}, err
		}
		h := sha256.Sum256(spki)
		doc, err := json.Marshal(dummyDoc{UserData: h[:], Nonce: peerNonce})
		if err != nil {
			return tls.Certificate{}, err
		}
		tmpl.ExtraExtensions = []pkix.Extension{{Id: dummyOID, Critical: o.criticalExt, Value: doc}}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// verify is Constellation's VerifyPeerCertificate (spec §1.7) with the dummy validator.
func verify(rawCerts [][]byte, ownNonce []byte, validate bool) error {
	if len(rawCerts) == 0 {
		return errors.New("no certificate")
	}
	cert, err := x509.ParseCertificate(rawCerts[0])
	if err != nil {
		return fmt.Errorf("parse certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		return fmt.Errorf("verify certificate: %w", err)
	}
	if !validate {
		return nil
	}
	var oids []string
	for _, ext := range cert.Extensions {
		oids = append(oids, ext.Id.String())
		if ext.Id.Equal(qemuOID) {
			userData, pcr15, err := verifyQemuDoc(ext.Value, ownNonce)
			if err != nil {
				return fmt.Errorf("qemu-vtpm document: %w", err)
			}
			if !bytes.Equal(pcr15, make([]byte, 32)) {
				return errors.New("qemu-vtpm: PCR 15 is not zero")
			}
			spki, err := x509.MarshalPKIXPublicKey(cert.PublicKey)
			if err != nil {
				return err
			}
			if h := sha256.Sum256(spki); !bytes.Equal(h[:], userData) {
				return errors.New("certificate hash does not match user data")
			}
			return nil
		}
		if !ext.Id.Equal(dummyOID) {
			continue
		}
		var doc dummyDoc
		if err := json.Unmarshal(ext.Value, &doc); err != nil {
			return fmt.Errorf("dummy document: %w", err)
		}
		if !bytes.Equal(doc.Nonce, ownNonce) {
			return errors.New("dummy document: wrong nonce")
		}
		spki, err := x509.MarshalPKIXPublicKey(cert.PublicKey)
		if err != nil {
			return err
		}
		h := sha256.Sum256(spki)
		if !bytes.Equal(h[:], doc.UserData) {
			return errors.New("certificate hash does not match user data")
		}
		return nil
	}
	return fmt.Errorf("no attestation extension among %v", oids)
}

func serverConfig(o *options) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
			clientNonce, err := base64.StdEncoding.DecodeString(chi.ServerName)
			if err != nil {
				return nil, fmt.Errorf("SNI is not base64: %w", err)
			}
			key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				return nil, err
			}
			cert, err := certificate(key, clientNonce, o)
			if err != nil {
				return nil, err
			}
			cfg := &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{cert},
				NextProtos:   []string{"http/1.1", "h2"},
			}
			if o.noALPN {
				cfg.NextProtos = nil
			}
			if o.validate {
				serverNonce := nonce()
				caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
				caTmpl := &x509.Certificate{
					SerialNumber: big.NewInt(0),
					Subject: pkix.Name{
						CommonName: base64.StdEncoding.EncodeToString(serverNonce),
					},
				}
				caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
				if err != nil {
					return nil, err
				}
				ca, _ := x509.ParseCertificate(caDER)
				pool := x509.NewCertPool()
				pool.AddCert(ca)
				cfg.ClientCAs = pool
				cfg.ClientAuth = tls.RequireAnyClientCert
				cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
					return verify(raw, serverNonce, true)
				}
			}
			return cfg, nil
		},
	}
}

func clientConfig(o *options) *tls.Config {
	clientNonce := nonce()
	sni := base64.StdEncoding.EncodeToString(clientNonce)
	// grpc-go sends the ServerName as :authority; a '/' in it must not upset the server.
	for o.slashNonce && !strings.Contains(sni, "/") {
		clientNonce = nonce()
		sni = base64.StdEncoding.EncodeToString(clientNonce)
	}
	if o.badSNI {
		sni = hex.EncodeToString(clientNonce)
	}
	if o.sni != "" {
		sni = o.sni
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         sni,
		InsecureSkipVerify: true, // verified by attestation in VerifyPeerCertificate
		NextProtos:         []string{"h2"},
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verify(raw, clientNonce, o.validate)
		},
	}
	if o.noALPN {
		cfg.NextProtos = nil
	}
	if o.issue {
		cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if len(cri.AcceptableCAs) != 1 {
				return nil, fmt.Errorf("want 1 acceptable CA, got %d", len(cri.AcceptableCAs))
			}
			var rdns pkix.RDNSequence
			if _, err := asn1.Unmarshal(cri.AcceptableCAs[0], &rdns); err != nil {
				return nil, err
			}
			var name pkix.Name
			name.FillFromRDNSequence(&rdns)
			serverNonce, err := base64.StdEncoding.DecodeString(name.CommonName)
			if err != nil {
				return nil, err
			}
			key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				return nil, err
			}
			cert, err := certificate(key, serverNonce, o)
			return &cert, err
		}
	}
	return cfg
}

// exchange sends or answers "ping"/"pong" and checks the negotiated protocol like grpc-go
// (ALPN must be present).
func exchange(c *tls.Conn, client bool) error {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Handshake(); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	st := c.ConnectionState()
	if st.NegotiatedProtocol == "" {
		return errors.New("missing selected ALPN property")
	}
	buf := make([]byte, 4)
	if client {
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "pong" {
			return fmt.Errorf("no pong: %v", err)
		}
	} else {
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
			return fmt.Errorf("no ping: %v", err)
		}
		if _, err := c.Write([]byte("pong")); err != nil {
			return err
		}
	}
	fmt.Printf("OK version=%x suite=%s alpn=%s\n", st.Version, tls.CipherSuiteName(st.CipherSuite), st.NegotiatedProtocol)
	return nil
}

type joinServer struct {
	joinproto.UnimplementedAPIServer
	fail  bool
	delay time.Duration
	count int
	done  chan struct{}
}

func (j *joinServer) served() {
	j.count--
	if j.count == 0 {
		close(j.done)
	}
}

// checkCSR is the JoinService's CSR check (spec §7): DER, signature, single O, CN prefix.
func checkCSR(der []byte) (string, []string, error) {
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return "", nil, fmt.Errorf("parse CSR: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return "", nil, fmt.Errorf("CSR signature: %w", err)
	}
	if len(csr.Subject.Organization) != 1 || csr.Subject.Organization[0] != "system:nodes" {
		return "", nil, errors.New("CSR organization is not system:nodes")
	}
	if !strings.HasPrefix(csr.Subject.CommonName, "system:node:") {
		return "", nil, errors.New("CSR common name lacks system:node:")
	}
	var ips []string
	for _, ip := range csr.IPAddresses {
		ips = append(ips, ip.String())
	}
	return csr.Subject.CommonName, ips, nil
}

func (j *joinServer) IssueJoinTicket(ctx context.Context, req *joinproto.IssueJoinTicketRequest) (*joinproto.IssueJoinTicketResponse, error) {
	defer j.served()
	time.Sleep(j.delay)
	fields := map[string]interface{}{
		"disk_uuid": req.DiskUuid, "is_control_plane": req.IsControlPlane,
		"principals": req.HostCertificatePrincipals, "csr_len": len(req.CertificateRequest),
	}
	if len(req.CertificateRequest) > 0 {
		cn, ips, err := checkCSR(req.CertificateRequest)
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		pk, err := ssh.ParsePublicKey(req.HostPublicKey)
		if err != nil {
			return nil, status.Error(codes.Internal, "parsing host public key: "+err.Error())
		}
		fields["csr_cn"], fields["csr_ips"], fields["ssh_key_type"] = cn, ips, pk.Type()
	}
	if j.count <= 1 {
		line, _ := json.Marshal(fields)
		fmt.Printf("REQ %s\n", line)
	}
	if j.fail {
		return nil, status.Error(codes.Internal, "getting data key: key service unavailable")
	}
	if req.DiskUuid == "" {
		return nil, status.Error(codes.Internal, "empty disk uuid")
	}
	key := sha256.Sum256([]byte("key-" + req.DiskUuid))
	return &joinproto.IssueJoinTicketResponse{
		StateDiskKey:             key[:],
		MeasurementSalt:          make([]byte, 32),
		MeasurementSecret:        bytes.Repeat([]byte{0x42}, 32),
		KubeletCert:              []byte("-----BEGIN CERTIFICATE-----\nstand-in\n-----END CERTIFICATE-----\n"),
		ApiServerEndpoint:        "10.42.0.1:6443",
		Token:                    "abcdef.0123456789abcdef",
		DiscoveryTokenCaCertHash: "sha256:" + hex.EncodeToString(key[:]),
		ControlPlaneFiles: []*joinproto.ControlPlaneFile{
			{Name: "ca.crt", Data: []byte("pem")}, {Name: "etcd/ca.key", Data: []byte("etcd key")},
		},
		AuthorizedCaPublicKey: []byte("ssh-ed25519 AAAA stand-in\n"),
		HostCertificate:       []byte("ssh-ed25519-cert-v01@openssh.com AAAA stand-in\n"),
	}, nil
}

func (j *joinServer) IssueRejoinTicket(ctx context.Context, req *joinproto.IssueRejoinTicketRequest) (*joinproto.IssueRejoinTicketResponse, error) {
	defer j.served()
	time.Sleep(j.delay)
	fmt.Printf("REQ {\"rejoin_disk_uuid\":%q}\n", req.DiskUuid)
	if j.fail {
		return nil, status.Error(codes.Internal, "getting data key: key service unavailable")
	}
	key := sha256.Sum256([]byte("key-" + req.DiskUuid))
	return &joinproto.IssueRejoinTicketResponse{StateDiskKey: key[:], MeasurementSecret: bytes.Repeat([]byte{0x42}, 32)}, nil
}

func runJoinServer(o *options, fail bool, delay time.Duration, count int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("LISTEN %d\n", ln.Addr().(*net.TCPAddr).Port)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(serverConfig(o))))
	js := &joinServer{fail: fail, delay: delay, count: count, done: make(chan struct{})}
	joinproto.RegisterAPIServer(srv, js)
	go srv.Serve(ln)
	select {
	case <-js.done:
	case <-time.After(20*time.Second + time.Duration(count)*100*time.Millisecond):
		srv.Stop()
		return errors.New("not all requests arrived in time")
	}
	time.Sleep(200 * time.Millisecond) // let the response go out
	srv.Stop()
	return nil
}

func runJoinClient(o *options, addr, uuid string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, addr, grpc.WithTransportCredentials(credentials.NewTLS(clientConfig(o))), grpc.WithBlock())
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	resp, err := joinproto.NewAPIClient(conn).IssueJoinTicket(ctx, &joinproto.IssueJoinTicketRequest{
		DiskUuid: uuid, HostPublicKey: []byte("key"), HostCertificatePrincipals: []string{"10.42.0.2"},
	})
	if err != nil {
		st, _ := status.FromError(err)
		return fmt.Errorf("%d %s", st.Code(), st.Message())
	}
	line, _ := json.Marshal(map[string]interface{}{
		"state_disk_key": hex.EncodeToString(resp.StateDiskKey), "token": resp.Token,
		"files": len(resp.ControlPlaneFiles),
	})
	fmt.Printf("OK %s\n", line)
	return nil
}

// runFullJoinClient is a Go node joining with a Go-made CSR and SSH key; it checks the
// ticket with Go's x509 (kubelet certificate against the CA) and x/crypto/ssh (host
// certificate signed by the CA key the ticket names, valid for the principals).
func runFullJoinClient(o *options, addr, uuid, caPath string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, addr, grpc.WithTransportCredentials(credentials.NewTLS(clientConfig(o))), grpc.WithBlock())
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{Organization: []string{"system:nodes"}, CommonName: "system:node:go-worker"},
		IPAddresses: []net.IP{net.ParseIP("10.42.2.200")},
	}, key)
	if err != nil {
		return err
	}
	hostPub, _, _ := ed25519.GenerateKey(rand.Reader)
	sshPub, err := ssh.NewPublicKey(hostPub)
	if err != nil {
		return err
	}
	resp, err := joinproto.NewAPIClient(conn).IssueJoinTicket(ctx, &joinproto.IssueJoinTicketRequest{
		DiskUuid: uuid, CertificateRequest: csr, HostPublicKey: sshPub.Marshal(),
		HostCertificatePrincipals: []string{"10.42.2.200", "go-worker"},
	})
	if err != nil {
		st, _ := status.FromError(err)
		return fmt.Errorf("%d %s", st.Code(), st.Message())
	}
	caPEM, err := os.ReadFile(caPath)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	block, _ := pem.Decode(resp.KubeletCert)
	if block == nil {
		return errors.New("kubelet certificate is not PEM")
	}
	kc, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("kubelet certificate: %w", err)
	}
	if _, err := kc.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("kubelet certificate: %w", err)
	}
	caKey, _, _, _, err := ssh.ParseAuthorizedKey(resp.AuthorizedCaPublicKey)
	if err != nil {
		return fmt.Errorf("ssh CA: %w", err)
	}
	pk, _, _, _, err := ssh.ParseAuthorizedKey(resp.HostCertificate)
	if err != nil {
		return fmt.Errorf("host certificate: %w", err)
	}
	cert, ok := pk.(*ssh.Certificate)
	if !ok || cert.CertType != ssh.HostCert || !bytes.Equal(cert.SignatureKey.Marshal(), caKey.Marshal()) ||
		!bytes.Equal(cert.Key.Marshal(), sshPub.Marshal()) {
		return errors.New("host certificate: not a host certificate of our key by the ticket's CA")
	}
	checker := &ssh.CertChecker{IsHostAuthority: func(a ssh.PublicKey, _ string) bool { return bytes.Equal(a.Marshal(), caKey.Marshal()) }}
	if err := checker.CheckCert("go-worker", cert); err != nil {
		return fmt.Errorf("host certificate: %w", err)
	}
	line, _ := json.Marshal(map[string]interface{}{
		"state_disk_key": hex.EncodeToString(resp.StateDiskKey), "kubelet_cn": kc.Subject.CommonName,
		"token": resp.Token, "ca_hash": resp.DiscoveryTokenCaCertHash,
		"kubelet_ips": fmt.Sprint(kc.IPAddresses), "ssh_principals": cert.ValidPrincipals,
		"cluster_id": hex.EncodeToString(deriveKey(resp.MeasurementSecret, resp.MeasurementSalt, "key-clusterID")),
	})
	fmt.Printf("OK %s\n", line)
	return nil
}

type initServer struct {
	initproto.UnimplementedAPIServer
	hash []byte
	done chan struct{}
}

// Init is the bootstrapper's init server in Go: bcrypt, the cluster KMS, the cluster ID,
// then one success, or one failure followed by log chunks of at most 1024 bytes.
func (s *initServer) Init(req *initproto.InitRequest, stream initproto.API_InitServer) error {
	if err := bcrypt.CompareHashAndPassword(s.hash, req.InitSecret); err != nil {
		stream.Send(&initproto.InitResponse{Kind: &initproto.InitResponse_InitFailure{InitFailure: &initproto.InitFailureResponse{Error: "invalid init secret " + err.Error()}}})
		logs := bytes.Repeat([]byte("go init server log line\n"), 100)
		for len(logs) > 0 {
			n := len(logs)
			if n > 1024 {
				n = 1024
			}
			stream.Send(&initproto.InitResponse{Kind: &initproto.InitResponse_Log{Log: &initproto.LogResponseType{Log: logs[:n]}}})
			logs = logs[n:]
		}
		fmt.Println("REQ {\"init\":\"wrong secret\"}")
		return nil
	}
	defer close(s.done)
	key, salt, err := parseKMS(req.KmsUri)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	clusterID := deriveKey(deriveKey(key, salt, "key-measurementSecret"), req.MeasurementSalt, "key-clusterID")
	fmt.Printf("REQ {\"cluster_id\":\"%x\",\"storage\":%q}\n", clusterID, req.StorageUri)
	return stream.Send(&initproto.InitResponse{Kind: &initproto.InitResponse_InitSuccess{InitSuccess: &initproto.InitSuccessResponse{
		Kubeconfig: []byte("apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.42.1.100:6443\n  name: go\nkind: Config\n"), ClusterId: clusterID,
	}}})
}

// parseKMS is the cluster-KMS URI as internal/kms/uri parses it.
func parseKMS(raw string) ([]byte, []byte, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "kms" || u.Host != "cluster-kms" {
		return nil, nil, fmt.Errorf("kms URI %q", raw)
	}
	get := func(name string) ([]byte, error) {
		v, err := url.QueryUnescape(u.Query().Get(name))
		if err != nil || v == "" {
			return nil, fmt.Errorf("kms URI: %s missing", name)
		}
		return base64.URLEncoding.DecodeString(v)
	}
	key, err := get("key")
	if err != nil {
		return nil, nil, err
	}
	salt, err := get("salt")
	return key, salt, err
}

type recoverServer struct {
	recoverproto.UnimplementedAPIServer
	uuid string
	done chan struct{}
}

func (s *recoverServer) Recover(ctx context.Context, req *recoverproto.RecoverMessage) (*recoverproto.RecoverResponse, error) {
	defer close(s.done)
	key, salt, err := parseKMS(req.KmsUri)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	fmt.Printf("REQ {\"disk_key\":\"%x\",\"storage\":%q}\n", deriveKey(key, salt, "key-"+s.uuid), req.StorageUri)
	return &recoverproto.RecoverResponse{}, nil
}

// metadataRole parses roles as Constellation's role.Role does (case-insensitive, dashes).
type metadataRole string

func (r *metadataRole) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	switch strings.ToLower(strings.ReplaceAll(s, "-", "")) {
	case "controlplane":
		*r = "ControlPlane"
	case "worker":
		*r = "Worker"
	default:
		return fmt.Errorf("unknown role %q", s)
	}
	return nil
}

type instanceMetadata struct {
	Name, ProviderID string
	Role             metadataRole
	VPCIP            string
	SecondaryIPRange string
	AliasIPRanges    []string
}

// runMetadataClient reads the QEMU metadata API as Constellation's qemu cloud provider does:
// no status check, just the body parsed.
func runMetadataClient(base string) error {
	get := func(path string) ([]byte, error) {
		c := &http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get(base + path)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	var self instanceMetadata
	var peers []instanceMetadata
	var endpoint string
	b, err := get("/self")
	if err == nil {
		err = json.Unmarshal(b, &self)
	}
	if err != nil {
		return fmt.Errorf("self: %w", err)
	}
	if b, err = get("/peers"); err == nil {
		err = json.Unmarshal(b, &peers)
	}
	if err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	if b, err = get("/endpoint"); err == nil {
		err = json.Unmarshal(b, &endpoint)
	}
	if err != nil || net.ParseIP(endpoint) == nil {
		return fmt.Errorf("endpoint: %v %q", err, endpoint)
	}
	hash, err := get("/initsecrethash")
	if err != nil {
		return err
	}
	line, _ := json.Marshal(map[string]interface{}{
		"self": self.Name, "role": self.Role, "vpcip": self.VPCIP, "peers": len(peers),
		"endpoint": endpoint, "hash": string(hash),
	})
	fmt.Printf("OK %s\n", line)
	return nil
}

// serveOnce runs a grpc-go server with our aTLS (dummy issuer) until done or 30 s.
func serveOnce(o *options, register func(*grpc.Server), done chan struct{}) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("LISTEN %d\n", ln.Addr().(*net.TCPAddr).Port)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(serverConfig(o))))
	register(srv)
	go srv.Serve(ln)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		srv.Stop()
		return errors.New("no call within 30 s")
	}
	time.Sleep(200 * time.Millisecond)
	srv.Stop()
	return nil
}

func deriveKey(secret, salt []byte, info string) []byte {
	out := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, secret, salt, []byte(info)), out); err != nil {
		panic(err)
	}
	return out
}

func zeroKMSURI() string {
	z := base64.URLEncoding.EncodeToString(make([]byte, 32))
	return "kms://cluster-kms?key=" + z + "&salt=" + z
}

func dialValidating(o *options, addr string) (*grpc.ClientConn, context.Context, context.CancelFunc, error) {
	o.validate = true
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	conn, err := grpc.DialContext(ctx, addr, grpc.WithTransportCredentials(credentials.NewTLS(clientConfig(o))), grpc.WithBlock())
	if err != nil {
		cancel()
		return nil, nil, nil, fmt.Errorf("dial: %w", err)
	}
	return conn, ctx, cancel, nil
}

// runInitClient is the CLI's init step with the stream rules of applyinit.go (spec §5.5).
func runInitClient(o *options, addr, secretHex string) error {
	secret, err := hex.DecodeString(secretHex)
	if err != nil {
		return err
	}
	conn, ctx, cancel, err := dialValidating(o, addr)
	if err != nil {
		return err
	}
	defer cancel()
	defer conn.Close()
	stream, err := initproto.NewAPIClient(conn).Init(ctx, &initproto.InitRequest{
		KmsUri: zeroKMSURI(), StorageUri: "storage://no-store", MeasurementSalt: make([]byte, 32),
		KubernetesVersion: "v1.32.9", InitSecret: secret, ClusterName: "interop",
		ApiserverCertSans: []string{"10.42.0.1", "api.example"}, ServiceCidr: "10.96.0.0/12",
	})
	if err != nil {
		return err
	}
	first, err := stream.Recv()
	if err != nil {
		st, _ := status.FromError(err)
		return fmt.Errorf("%d %s", st.Code(), st.Message())
	}
	switch kind := first.Kind.(type) {
	case *initproto.InitResponse_InitSuccess:
		want := deriveKey(deriveKey(make([]byte, 32), make([]byte, 32), "key-measurementSecret"), make([]byte, 32), "key-clusterID")
		if !bytes.Equal(kind.InitSuccess.ClusterId, want) {
			return fmt.Errorf("cluster ID %x, want %x", kind.InitSuccess.ClusterId, want)
		}
		line, _ := json.Marshal(map[string]interface{}{
			"cluster_id": hex.EncodeToString(kind.InitSuccess.ClusterId),
			"kubeconfig": string(kind.InitSuccess.Kubeconfig), "owner_id": len(kind.InitSuccess.OwnerId),
		})
		fmt.Printf("OK %s\n", line)
		return nil
	case *initproto.InitResponse_InitFailure:
		logs, chunks, maxChunk := 0, 0, 0
		for {
			msg, err := stream.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("receiving logs: %w", err)
			}
			l, ok := msg.Kind.(*initproto.InitResponse_Log)
			if !ok {
				return errors.New("received another message than log during log collection")
			}
			if l.Log.Log == nil {
				return errors.New("received empty logs")
			}
			logs += len(l.Log.Log)
			chunks++
			if len(l.Log.Log) > maxChunk {
				maxChunk = len(l.Log.Log)
			}
		}
		line, _ := json.Marshal(map[string]interface{}{
			"error": kind.InitFailure.Error, "log_bytes": logs, "chunks": chunks, "max_chunk": maxChunk,
		})
		fmt.Printf("FAIL %s\n", line)
		os.Exit(3)
	default:
		return fmt.Errorf("first message is %T, want success or failure", first.Kind)
	}
	return nil
}

func runRecoverClient(o *options, addr string) error {
	conn, ctx, cancel, err := dialValidating(o, addr)
	if err != nil {
		return err
	}
	defer cancel()
	defer conn.Close()
	_, err = recoverproto.NewAPIClient(conn).Recover(ctx, &recoverproto.RecoverMessage{
		KmsUri: zeroKMSURI(), StorageUri: "storage://no-store",
	})
	if err != nil {
		st, _ := status.FromError(err)
		return fmt.Errorf("%d %s", st.Code(), st.Message())
	}
	fmt.Println("OK")
	return nil
}

// runJoinBench: count sequential fresh connections, each handshake + one IssueJoinTicket.
func runJoinBench(o *options, addr string, count int) error {
	o.issue = true
	var lat []time.Duration
	for i := 0; i < count; i++ {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		conn, err := grpc.DialContext(ctx, addr, grpc.WithTransportCredentials(credentials.NewTLS(clientConfig(o))), grpc.WithBlock())
		if err != nil {
			cancel()
			return fmt.Errorf("dial: %w", err)
		}
		_, err = joinproto.NewAPIClient(conn).IssueJoinTicket(ctx, &joinproto.IssueJoinTicketRequest{
			DiskUuid: "bench", HostPublicKey: []byte("key"),
		})
		conn.Close()
		cancel()
		if err != nil {
			return err
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Printf("BENCH median_us=%d maxrss_kb=%d\n", lat[len(lat)/2].Microseconds(), ru.Maxrss)
	return nil
}

// The JSON of vtpm.AttestationDocument as Go's encoding/json writes it (spec §2.2-2.3): the
// generated proto structs' json tags, in declaration order.
type goPCRs struct {
	Hash int32             `json:"hash,omitempty"`
	Pcrs map[uint32][]byte `json:"pcrs,omitempty"`
}
type goQuote struct {
	Quote  []byte  `json:"quote,omitempty"`
	RawSig []byte  `json:"raw_sig,omitempty"`
	Pcrs   *goPCRs `json:"pcrs,omitempty"`
}
type goAttestation struct {
	AkPub             []byte     `json:"ak_pub,omitempty"`
	Quotes            []*goQuote `json:"quotes,omitempty"`
	EventLog          []byte     `json:"event_log,omitempty"`
	InstanceInfo      *struct{}  `json:"instance_info,omitempty"`
	CanonicalEventLog []byte     `json:"canonical_event_log,omitempty"`
	AkCert            []byte     `json:"ak_cert,omitempty"`
	IntermediateCerts [][]byte   `json:"intermediate_certs,omitempty"`
	TeeAttestation    interface{}
}
type goDoc struct {
	Attestation  *goAttestation
	InstanceInfo []byte
	UserData     []byte
}

type rd struct {
	b   []byte
	err error
}

func (r *rd) n(k int) []byte {
	if r.err != nil || len(r.b) < k {
		r.err = errors.New("truncated TPM structure")
		return make([]byte, k)
	}
	v := r.b[:k]
	r.b = r.b[k:]
	return v
}
func (r *rd) u8() uint8     { return r.n(1)[0] }
func (r *rd) u16() uint16   { return binary.BigEndian.Uint16(r.n(2)) }
func (r *rd) u32() uint32   { return binary.BigEndian.Uint32(r.n(4)) }
func (r *rd) tpm2b() []byte { return r.n(int(r.u16())) }

// rsaAK decodes a TPMT_PUBLIC of type RSA.
func rsaAK(b []byte) (*rsa.PublicKey, error) {
	r := &rd{b: b}
	if r.u16() != 0x0001 {
		return nil, errors.New("AK is not RSA")
	}
	r.u16()   // nameAlg
	r.u32()   // attributes
	r.tpm2b() // authPolicy
	if sym := r.u16(); sym != 0x0010 {
		return nil, errors.New("AK has a symmetric algorithm")
	}
	if scheme := r.u16(); scheme != 0x0010 {
		r.u16()
	}
	r.u16() // keyBits
	e := r.u32()
	n := r.tpm2b()
	if r.err != nil || len(r.b) != 0 {
		return nil, errors.New("AK public area malformed")
	}
	if e == 0 {
		e = 65537
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(e)}, nil
}

var tpmHashes = map[uint16]crypto.Hash{0x0004: crypto.SHA1, 0x000B: crypto.SHA256, 0x000C: crypto.SHA384, 0x000D: crypto.SHA512}

func verifyQuote(ak *rsa.PublicKey, q *goQuote, tpmNonce []byte) error {
	s := &rd{b: q.RawSig}
	if s.u16() != 0x0014 {
		return errors.New("signature is not RSASSA")
	}
	h, ok := tpmHashes[s.u16()]
	if !ok || h == crypto.SHA1 {
		return errors.New("signature hash not SHA-256/384/512")
	}
	sig := s.tpm2b()
	if s.err != nil {
		return s.err
	}
	hh := h.New()
	hh.Write(q.Quote)
	if err := rsa.VerifyPKCS1v15(ak, h, hh.Sum(nil), sig); err != nil {
		return fmt.Errorf("quote signature: %w", err)
	}
	a := &rd{b: q.Quote}
	if a.u32() != 0xff544347 || a.u16() != 0x8018 {
		return errors.New("not a TPM quote")
	}
	a.tpm2b() // qualifiedSigner
	if extra := a.tpm2b(); !bytes.Equal(extra, tpmNonce) {
		return errors.New("quote nonce mismatch")
	}
	a.n(17) // clockInfo
	a.n(8)  // firmwareVersion
	if a.u32() != 1 {
		return errors.New("quote selects more than one bank")
	}
	if alg := a.u16(); q.Pcrs == nil || int32(alg) != q.Pcrs.Hash {
		return errors.New("quote bank differs from pcrs.hash")
	}
	sel := a.n(int(a.u8()))
	digest := a.tpm2b()
	if a.err != nil {
		return a.err
	}
	var idx []int
	for i, b := range sel {
		for bit := 0; bit < 8; bit++ {
			if b&(1<<bit) != 0 {
				idx = append(idx, i*8+bit)
			}
		}
	}
	if len(idx) != len(q.Pcrs.Pcrs) {
		return errors.New("PCR selection does not match the pcrs map")
	}
	d := h.New()
	for _, i := range idx {
		v, ok := q.Pcrs.Pcrs[uint32(i)]
		if !ok {
			return fmt.Errorf("PCR %d selected but not in the map", i)
		}
		d.Write(v)
	}
	if !bytes.Equal(d.Sum(nil), digest) {
		return errors.New("PCR digest mismatch")
	}
	return nil
}

func runVerifyQemu(nonceHex, docPath string) error {
	nonce, err := hex.DecodeString(nonceHex)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(docPath)
	if err != nil {
		return err
	}
	userData, pcr15, err := verifyQemuDoc(bytes.TrimRight(raw, "\n"), nonce)
	if err != nil {
		return err
	}
	fmt.Printf("OK user_data=%x pcr15=%x\n", userData, pcr15)
	return nil
}

// verifyQemuDoc is spec §2.6 without the event-log replay and measurements: the document
// must be Go's own encoding, one quote of SHA-512/384/256 must verify, and the SHA-256
// quote gives PCR 15.
func verifyQemuDoc(raw, nonce []byte) ([]byte, []byte, error) {
	var doc goDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, nil, fmt.Errorf("document: %w", err)
	}
	again, err := json.Marshal(&doc)
	if err != nil {
		return nil, nil, err
	}
	if !bytes.Equal(again, raw) {
		return nil, nil, fmt.Errorf("not byte-identical to Go's encoding: go %d bytes, ours %d", len(again), len(raw))
	}
	if doc.Attestation == nil {
		return nil, nil, errors.New("no Attestation")
	}
	ak, err := rsaAK(doc.Attestation.AkPub)
	if err != nil {
		return nil, nil, err
	}
	extra := sha256.Sum256(append(append([]byte{}, doc.UserData...), nonce...))
	tpmNonce := sha256.Sum256(append(append([]byte{}, doc.InstanceInfo...), extra[:]...))
	var errs []string
	verified := false
	var pcr15 []byte
	for _, alg := range []int32{0x000D, 0x000C, 0x000B, 0x0004} {
		for _, q := range doc.Attestation.Quotes {
			if q == nil || q.Pcrs == nil {
				return nil, nil, errors.New("a quote without pcrs")
			}
			if q.Pcrs.Hash == 0x000B {
				pcr15 = q.Pcrs.Pcrs[15]
			}
			if q.Pcrs.Hash != alg || verified {
				continue
			}
			if alg == 0x0004 {
				errs = append(errs, "SHA-1 quote refused")
				continue
			}
			if err := verifyQuote(ak, q, tpmNonce[:]); err != nil {
				errs = append(errs, fmt.Sprintf("bank %d: %v", alg, err))
				continue
			}
			verified = true
		}
	}
	if !verified {
		return nil, nil, fmt.Errorf("no quote verified: %s", strings.Join(errs, "; "))
	}
	if pcr15 == nil {
		return nil, nil, errors.New("no SHA-256 quote")
	}
	return doc.UserData, pcr15, nil
}

// aws-sdk-go-v2 feature/ec2/imds InstanceIdentityDocument: its fields, order and tags.
type awsIdentityDocument struct {
	DevpayProductCodes      []string  `json:"devpayProductCodes"`
	MarketplaceProductCodes []string  `json:"marketplaceProductCodes"`
	AvailabilityZone        string    `json:"availabilityZone"`
	PrivateIP               string    `json:"privateIp"`
	Version                 string    `json:"version"`
	Region                  string    `json:"region"`
	InstanceID              string    `json:"instanceId"`
	BillingProducts         []string  `json:"billingProducts"`
	InstanceType            string    `json:"instanceType"`
	AccountID               string    `json:"accountId"`
	PendingTime             time.Time `json:"pendingTime"`
	ImageID                 string    `json:"imageId"`
	KernelID                string    `json:"kernelId"`
	RamdiskID               string    `json:"ramdiskId"`
	Architecture            string    `json:"architecture"`
}

// go-tpm-tools attest.GCEInstanceInfo as protoc-gen-go tags it.
type gceInstanceInfo struct {
	Zone          string `json:"zone,omitempty"`
	ProjectId     string `json:"project_id,omitempty"`
	ProjectNumber uint64 `json:"project_number,omitempty"`
	InstanceName  string `json:"instance_name,omitempty"`
	InstanceId    uint64 `json:"instance_id,omitempty"`
}

func runVerifyII(variant, docPath, source string) error {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		return err
	}
	var doc goDoc
	if err := json.Unmarshal(bytes.TrimSpace(raw), &doc); err != nil {
		return fmt.Errorf("document: %w", err)
	}
	ii := doc.InstanceInfo
	var v interface{}
	switch variant {
	case "aws-nitro-tpm":
		v = &awsIdentityDocument{}
	case "gcp-sev-es":
		v = &gceInstanceInfo{}
	default:
		return fmt.Errorf("verify-ii: no variant %q", variant)
	}
	if err := json.Unmarshal(ii, v); err != nil {
		return fmt.Errorf("InstanceInfo: %w", err)
	}
	again, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if !bytes.Equal(again, ii) {
		return fmt.Errorf("InstanceInfo is not Go's encoding: go %s, ours %s", again, ii)
	}
	if g, ok := v.(*gceInstanceInfo); ok && (g.Zone == "" || g.ProjectId == "" || g.InstanceName == "") {
		return fmt.Errorf("InstanceInfo lacks zone, project_id or instance_name: %s", ii)
	}
	if source != "" {
		body, err := os.ReadFile(source)
		if err != nil {
			return err
		}
		var d awsIdentityDocument
		if err := json.Unmarshal(body, &d); err != nil {
			return fmt.Errorf("source: %w", err)
		}
		fromSource, err := json.Marshal(&d)
		if err != nil {
			return err
		}
		if !bytes.Equal(fromSource, ii) {
			return fmt.Errorf("InstanceInfo is not what Go makes of the IMDS body: go %s, ours %s", fromSource, ii)
		}
	}
	fmt.Printf("OK %s\n", ii)
	return nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: atlspeer server|client [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	o := &options{}
	addr := fs.String("addr", "", "server address (client)")
	fs.BoolVar(&o.issue, "issue", false, "attest our certificate (dummy variant)")
	fs.BoolVar(&o.validate, "validate", false, "require and check the peer's attestation")
	fs.BoolVar(&o.criticalExt, "critical-ext", false, "mark the attestation extension critical")
	fs.BoolVar(&o.badSNI, "bad-sni", false, "send the nonce as hex instead of base64")
	fs.BoolVar(&o.noALPN, "no-alpn", false, "offer or select no ALPN protocol")
	fs.StringVar(&o.sni, "sni", "", "send this SNI instead of the base64 nonce")
	fs.BoolVar(&o.slashNonce, "slash-nonce", false, "pick a client nonce whose base64 has a '/'")
	fail := fs.Bool("fail", false, "join-server: answer every call with Internal")
	uuid := fs.String("disk-uuid", "", "join-client: the disk UUID to send")
	delay := fs.Duration("delay", 0, "join-server: answer this late")
	count := fs.Int("count", 1, "join-server: calls to serve; join-bench: calls to make")
	secret := fs.String("secret", "", "init-client, bcrypt: the init secret in hex")
	nonceHex := fs.String("nonce", "", "verify-qemu: our nonce in hex")
	caPath := fs.String("ca", "", "join-client: with a real CSR and SSH key, verify the ticket against this CA")
	hashPath := fs.String("hash", "", "init-server: the bcrypt hash file of the init secret")
	docPath := fs.String("doc", "", "verify-qemu: the document file")
	variant := fs.String("variant", "", "verify-ii: the attestation variant")
	source := fs.String("source", "", "verify-ii: the raw IMDS identity document")
	fs.Parse(os.Args[2:])

	var err error
	switch os.Args[1] {
	case "server":
		var ln net.Listener
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			break
		}
		fmt.Printf("LISTEN %d\n", ln.Addr().(*net.TCPAddr).Port)
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(20 * time.Second))
		var conn net.Conn
		conn, err = ln.Accept()
		if err != nil {
			break
		}
		err = exchange(tls.Server(conn, serverConfig(o)), false)
		conn.Close()
	case "client":
		var conn net.Conn
		conn, err = net.DialTimeout("tcp", *addr, 5*time.Second)
		if err != nil {
			break
		}
		err = exchange(tls.Client(conn, clientConfig(o)), true)
		conn.Close()
	case "join-server":
		o.validate = true
		err = runJoinServer(o, *fail, *delay, *count)
	case "init-client":
		err = runInitClient(o, *addr, *secret)
	case "recover-client":
		err = runRecoverClient(o, *addr)
	case "metadata-client":
		err = runMetadataClient(*addr)
	case "verify-qemu":
		err = runVerifyQemu(*nonceHex, *docPath)
	case "verify-ii":
		err = runVerifyII(*variant, *docPath, *source)
	case "join-bench":
		err = runJoinBench(o, *addr, *count)
	case "bcrypt":
		var raw, h []byte
		if raw, err = hex.DecodeString(*secret); err == nil {
			if h, err = bcrypt.GenerateFromPassword(raw, bcrypt.DefaultCost); err == nil {
				fmt.Println(string(h))
			}
		}
	case "join-client":
		o.issue = true
		if *caPath != "" {
			err = runFullJoinClient(o, *addr, *uuid, *caPath)
		} else {
			err = runJoinClient(o, *addr, *uuid)
		}
	case "init-server":
		o.issue = true
		var h []byte
		if h, err = os.ReadFile(*hashPath); err == nil {
			s := &initServer{hash: bytes.TrimSpace(h), done: make(chan struct{})}
			err = serveOnce(o, func(g *grpc.Server) { initproto.RegisterAPIServer(g, s) }, s.done)
		}
	case "recover-server":
		o.issue = true
		s := &recoverServer{uuid: *uuid, done: make(chan struct{})}
		err = serveOnce(o, func(g *grpc.Server) { recoverproto.RegisterAPIServer(g, s) }, s.done)
	default:
		fmt.Fprintln(os.Stderr, "usage: atlspeer server|client [flags]")
		os.Exit(2)
	}
	if err != nil {
		fmt.Printf("ERR %v\n", err)
		os.Exit(1)
	}
}
